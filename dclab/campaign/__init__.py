"""Many runs: campaign files and their plan, one-factor sweeps, the runner (plan a run,
perform it, store it, the failure policy), the SQLite result store, and the HTML report."""
