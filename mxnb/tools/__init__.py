"""Command-line tools: ``python -m mxnb.tools.im2rec`` (image folder -> .lst -> .rec/.idx)."""
