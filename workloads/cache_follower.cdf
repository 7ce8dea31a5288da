# Facebook cache-follower flow sizes, from:
#   A. Roy, H. Zeng, J. Bagga, G. Porter and A. C. Snoeren, "Inside the
#   Social Network's (Datacenter) Network", SIGCOMM 2015, Fig. 6 (flow sizes
#   of the cache-follower cluster).
# This 23-point table is the one ExpressPass's simulator ships
# (shared/workloads/xpass__workload_cachefollower.tcl, sizes in bytes);
# the same numbers are in shared/workloads/gzeng-wanns3__cache_follower.cdf.
# The Vertigo and Canary evaluations draw their background traffic from
# this distribution. A test checks every point against the public copy.
# Format: <size_bytes> <cumulative probability>; linear interpolation between
# points.
70 0
70 0.01
150 0.015
150 0.04
300 0.08
350 0.1
350 0.19
450 0.2
500 0.28
600 0.3
700 0.35
1100 0.4
2000 0.42
10000 0.48
30000 0.5
100000 0.52
200000 0.6
400000 0.68
600000 0.7
1500000 0.701
2000000 0.8
2400000 0.9
3000000 1
