# no sizes at all
