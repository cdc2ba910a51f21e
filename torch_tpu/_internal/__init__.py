"""TorchTPU-compatible import paths."""
