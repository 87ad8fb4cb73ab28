// API module.
