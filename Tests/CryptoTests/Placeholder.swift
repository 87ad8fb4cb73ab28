// CryptoTests
