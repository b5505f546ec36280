package argocd

import "github.com/relcap/relcap/workflow"

var _ workflow.ClusterOwnershipSource = (*Pool)(nil)

// ReadsCluster marks the pool as the cluster's ownership source: the
// ownership check asks it only when Terraform writes Kubernetes objects,
// and goes on offline, saying so, when it cannot be reached.
func (*Pool) ReadsCluster() {}
