# Data mining flow sizes, from the VL2 paper:
#   A. Greenberg et al., "VL2: A Scalable and Flexible Data Center Network",
#   SIGCOMM 2009, Fig. 2 (flow sizes in a data-mining cluster).
# The 9-point table below is the one pFabric and pHost simulate, in
# 1460-byte packets (1, 1, 2, 3, 7, 267, 2107, 66667, 666667), here
# multiplied by 1460 to give bytes. Checked point by point against the
# public copy shared/workloads/netsys__CDF_datamining.txt.
# Format: <size_bytes> <cumulative probability>; linear interpolation.
# Mean = 7,470,236 bytes (≈ 5117 packets).
1460 0.0
1460 0.5
2920 0.6
4380 0.7
10220 0.8
389820 0.9
3076220 0.95
97333820 0.99
973333820 1.0
