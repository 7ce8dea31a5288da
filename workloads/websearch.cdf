# Web search flow sizes, from the DCTCP paper:
#   M. Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010, Fig. 4
#   (query and background traffic of a production web-search cluster).
# The 12-point table below is the one pFabric (SIGCOMM 2013) and pHost
# (CoNEXT 2015) simulate: sizes there are in 1460-byte packets
# (6, 6, 13, 19, 33, 53, 133, 667, 1333, 3333, 6667, 20000); here they are
# multiplied by 1460 to give bytes. Checked point by point against the public
# copy shared/workloads/netsys__CDF_dctcp.txt (pHost's simulator).
# Format: <size_bytes> <cumulative probability>; linear interpolation between
# points. Mean = 1,665,831 bytes (≈ 1141 packets).
8760 0.0
8760 0.15
18980 0.2
27740 0.3
48180 0.4
77380 0.53
194180 0.6
973820 0.7
1946180 0.8
4866180 0.9
9733820 0.97
29200000 1.0
