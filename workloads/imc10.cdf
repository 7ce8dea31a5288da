# "IMC10" flow sizes used by the pHost paper (Gao et al., CoNEXT 2015) as its
# third workload, attributed there to T. Benson, A. Akella, D. Maltz,
# "Network Traffic Characteristics of Data Centers in the Wild", IMC 2010.
# The table comes from pHost's public simulator (shared/workloads/
# netsys__CDF_aditya.txt, sizes in 1460-byte packets, here × 1460 bytes).
# Its origin beyond that simulator is NOT verified.
# Format: <size_bytes> <cumulative probability>; linear interpolation.
# Mean = 195,357 bytes (≈ 134 packets).
1460 0
1460 0.5
2920 0.6
4380 0.7
7300 0.75
10220 0.8
58400 0.8125
105120 0.825
200020 0.85
389820 0.9
1733020 0.95
3076220 1.0
