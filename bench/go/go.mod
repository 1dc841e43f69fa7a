module goscope.bench

go 1.19
