"""Tests in a real JupyterLab (a package, so its modules import the server helpers)."""
