// APITests
