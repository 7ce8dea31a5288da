# A small stand-in for the Alibaba WAN sizes (workloads/ali_wan.cdf, mean
# 65 MB) so that the CI-sized FlashPass run finishes in seconds: sizes from
# 100 KB to 8 MB, a quarter of them below 1 MB. Not a published workload.
100000 0
1000000 0.25
4000000 0.75
8000000 1
