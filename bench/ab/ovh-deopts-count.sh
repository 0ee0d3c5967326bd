#!/bin/sh
# Deopts (and "marking ... for deoptimization") inside each contender's timed samples, from ovh-deopts.mjs's output.
awk '/^@@SAMPLE/{name=substr($0,10); on=1; next} /^@@END/{on=0; next} on && /bailout|marking dependent code/{d[name]++} /^@@RESULT/{print} END{for (n in d) print "deopts in samples:", n, d[n]}'
