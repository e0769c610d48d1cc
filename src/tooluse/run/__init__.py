"""A run: the `Agent`, its loop over model rounds, streams, traces and the result."""
