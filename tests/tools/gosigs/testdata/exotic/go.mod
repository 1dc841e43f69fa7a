module goscope.gosigs.exotic

go 1.19
