// etcd for kcycle's real-cluster tests: the same entry point as etcd's own main package, built
// from go.etcd.io/etcd/server/v3 so that one module pins etcd and Kubernetes together.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
