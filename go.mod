module ergo.services/actor/leader

go 1.26

require (
	ergo.services/ergo v1.999.330
	github.com/stretchr/testify v1.12.1
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
