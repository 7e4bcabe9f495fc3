module ergo.services/actor/leader

go 1.26

require (
	ergo.services/ergo v1.999.321-0.20260604080356-c601c4697361
	github.com/stretchr/testify v1.12.1
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
