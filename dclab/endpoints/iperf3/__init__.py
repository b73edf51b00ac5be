"""UDP at a constant offered rate (iperf3), a load for the capacity experiment."""
