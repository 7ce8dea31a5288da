# One size: 1 MB background flows (FastLane tests).
1000000 1
