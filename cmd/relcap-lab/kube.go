package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"time"
)

// kubectl runs the lab's kubectl against the lab's apiserver. The main
// module never links Kubernetes client libraries: the lab drives the
// binaries it built.
type kubectl struct {
	bin        string
	kubeconfig string
}

// run runs kubectl with args, stdin as its input, and returns stdout.
func (k kubectl) run(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, k.bin, append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// apply applies documents (YAML or JSON) server-side, forcing conflicts:
// the lab owns these objects.
func (k kubectl) apply(ctx context.Context, docs string, extra ...string) error {
	_, err := k.run(ctx, docs, append([]string{"apply", "--server-side", "--force-conflicts", "--field-manager=relcap-lab", "-f", "-"}, extra...)...)
	return err
}

// applyFiles applies files server-side.
func (k kubectl) applyFiles(ctx context.Context, files []string, extra ...string) error {
	args := []string{"apply", "--server-side", "--force-conflicts", "--field-manager=relcap-lab"}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	_, err := k.run(ctx, "", append(args, extra...)...)
	return err
}

// wait runs kubectl wait until it succeeds or ctx ends: kubectl wait
// fails at once, rather than waiting, on an object whose status has no
// conditions yet (a CRD or node just created).
func (k kubectl) wait(ctx context.Context, condition string, objects ...string) error {
	for {
		_, err := k.run(ctx, "", append([]string{"wait", "--for=condition=" + condition, "--timeout=10s"}, objects...)...)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not %s: %w (last: %v)", strings.Join(objects, ", "), condition, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// secretValue polls until Secret ns/name has key, and returns it decoded.
func (k kubectl) secretValue(ctx context.Context, ns, name, key string) (string, error) {
	for {
		out, err := k.run(ctx, "", "get", "secret", "-n", ns, name, "-o", "jsonpath={.data."+key+"}")
		if err == nil && out != "" {
			b, derr := base64.StdEncoding.DecodeString(out)
			if derr != nil {
				return "", fmt.Errorf("secret %s/%s key %s: %w", ns, name, key, derr)
			}
			return string(b), nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("secret %s/%s key %s never appeared: %w (last: %v)", ns, name, key, ctx.Err(), err)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// argoAPI is argocd-server's REST gateway: https verified against the
// lab's CA, or plain http when the lab serves Argo CD in plaintext.
type argoAPI struct {
	base   string // scheme://host:port
	client *http.Client
}

// newArgoAPI reaches server (host:port) over TLS verified with caPEM, or
// in plaintext when caPEM is nil.
func newArgoAPI(server string, caPEM []byte) argoAPI {
	if caPEM == nil {
		return argoAPI{base: "http://" + server, client: http.DefaultClient}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return argoAPI{base: "https://" + server, client: &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}}
}

// healthz is the server's readiness probe.
func (a argoAPI) healthz() Probe { return httpProbe(a.client, a.base+"/healthz", "", "") }

// argoLogin creates an Argo CD session for user through the server's REST
// gateway (POST /api/v1/session, the same SessionCreateRequest the argocd
// CLI sends over gRPC) and returns the session token.
func argoLogin(ctx context.Context, api argoAPI, user, password string) (string, error) {
	body, _ := json.Marshal(map[string]string{"username": user, "password": password})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, api.base+"/api/v1/session", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := api.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("argo cd login: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("argo cd login as %s: %s: %s", user, resp.Status, strings.TrimSpace(string(b)))
	}
	var s struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(b, &s); err != nil || s.Token == "" {
		return "", fmt.Errorf("argo cd login as %s: no token in %q", user, b)
	}
	return s.Token, nil
}

// argoApp is the part of an Application's status `up` and `status` show.
type argoApp struct {
	Name     string
	Sync     string
	Revision string
	Health   string
}

// argoApps lists Applications through Argo CD's REST gateway.
func argoApps(ctx context.Context, api argoAPI, token string) ([]argoApp, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, api.base+"/api/v1/applications", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := api.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("list argo cd applications: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("list argo cd applications: %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	var list struct {
		Items []struct {
			Metadata struct{ Name string }
			Status   struct {
				Sync struct {
					Status   string
					Revision string
				}
				Health struct{ Status string }
			}
		}
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("list argo cd applications: %w", err)
	}
	var out []argoApp
	for _, it := range list.Items {
		out = append(out, argoApp{Name: it.Metadata.Name, Sync: it.Status.Sync.Status, Revision: it.Status.Sync.Revision, Health: it.Status.Health.Status})
	}
	return out, nil
}
