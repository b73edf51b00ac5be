"""`make bench` (bench/run.py): dcemu measured side by side with the kernel path."""
