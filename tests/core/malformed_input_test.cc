// Placeholder replaced below by the table-driven suite.
