"""Numbers and figures from what runs recorded (dcemu stats, stored runs); generic over
experiments, which say which metrics and flows to draw."""
