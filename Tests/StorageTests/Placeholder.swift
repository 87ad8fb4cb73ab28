// StorageTests
