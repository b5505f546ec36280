# The prod root module. Terraform's built-in terraform_data needs no
# provider download, so `relcap plan prod` runs as it is.
terraform {
  required_version = ">= 1.4"
}

resource "terraform_data" "web" {
  input = "prod"
}
