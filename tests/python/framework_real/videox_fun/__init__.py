"""The reference module's framework as the real-library tests need it: its `models` and `pipeline`
re-export the real diffusers and transformers classes, as the framework's own do."""
