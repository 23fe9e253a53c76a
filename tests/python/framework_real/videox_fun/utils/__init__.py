"""Where the tests load the reference module (videox_fun.utils.seed_perf)."""
