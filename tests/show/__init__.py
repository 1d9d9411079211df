"""What the user sees: the terminal report, HTML, the live monitor and its follower, notebooks."""
