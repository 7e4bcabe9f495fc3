module ergo.services/ergo

go 1.26
