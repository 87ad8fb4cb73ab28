// JSONTests
