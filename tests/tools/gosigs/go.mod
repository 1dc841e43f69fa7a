module goscope.gosigs

go 1.19
