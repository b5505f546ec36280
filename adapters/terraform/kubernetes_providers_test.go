package terraform_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relcap/relcap/adapters/terraform"
)

func TestKubernetesProvidersOfALockFile(t *testing.T) {
	t.Parallel()
	lock := []byte(`# This file is maintained automatically by "terraform init".

provider "registry.terraform.io/hashicorp/aws" {
  version = "5.0.0"
}

provider "registry.terraform.io/hashicorp/kubernetes" {
  version     = "2.31.0"
  constraints = "~> 2.0"
}

provider "registry.terraform.io/gavinbunney/kubectl" {
  version = "1.14.0"
}

provider "registry.opentofu.org/hashicorp/helm" {
  version = "2.12.0"
}
`)
	require.Equal(t, []string{"registry.opentofu.org/hashicorp/helm", "registry.terraform.io/gavinbunney/kubectl", "registry.terraform.io/hashicorp/kubernetes"},
		terraform.KubernetesProvidersOf(lock))
	require.Empty(t, terraform.KubernetesProvidersOf([]byte(`provider "registry.terraform.io/hashicorp/random" {}`)))
}
