# Background flows of the FastLane evaluation: every flow is 1 MB
# ("1 MB all-to-all flows", FastLane SoCC15 talk slides).
1000000 1
