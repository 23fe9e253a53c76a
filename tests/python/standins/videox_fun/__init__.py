"""Stand-in for the videox_fun framework (see ../README.md)."""
