# Test double (see ../../README.md).
__version__ = "test-double"
