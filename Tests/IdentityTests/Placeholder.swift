// IdentityTests
