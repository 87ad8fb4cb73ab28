// HTTP1Tests
