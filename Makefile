# The commands README.md gives and CI runs. Every target is self-contained.
.PHONY: demo demo-nacos sim test bench lint

# The main demo: every balancer side by side against three providers that
# the demo starts itself on loopback (direct URLs, no registry); needs
# nothing installed beyond Go.
demo:
	go run ./samples/demo

# The same demo through a real Nacos: starts it with it/nacos.sh (unless one
# answers on 127.0.0.1:8848; the first start needs a JDK 17+ and Maven),
# three sample provider processes, a Dubbo Java provider when a JDK and
# Maven are here (it/javaprovider.sh), and one sample consumer process per
# balancer. NACOS_ADDR=host:port[,host:port...] uses a Nacos (or a cluster:
# NACOS_ADDR=$(bash it/nacos.sh cluster addresses)) that runs already.
demo-nacos:
	go run ./samples/demo -nacos $(if $(NACOS_ADDR),-nacos-addr $(NACOS_ADDR))

# The load-balancing simulator: every balancer in every scenario on a
# virtual clock, through the real filter; tables and plots in lbsim-out/.
sim:
	go run ./samples/lbsim -out lbsim-out

# All tests: formatting and vet, then every unit and integration test with
# the race detector, against a real Nacos server that it/test.sh starts
# and stops.
test:
	bash it/test.sh

# Benchmarks of every balancer and of the filter beside dubbo-go's own.
bench:
	go test -run '^$$' -bench . -benchmem ./...

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	go vet ./...
