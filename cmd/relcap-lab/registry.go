package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// RegistryUser is the user the lab's registry accepts; its password is
// generated for each lab.
const RegistryUser = "relcap-lab"

// serveRegistry runs an in-memory OCI registry (go-containerregistry's
// pkg/registry, a real distribution API) on addr until ctx ends. `up` runs
// it as a process of its own (relcap-lab registry), so it lives as long as
// the lab, like every other component. With a users file (user:password
// lines) every request needs HTTP basic auth as one of them.
func serveRegistry(ctx context.Context, addr, usersFile string) error {
	var users map[string]string
	if usersFile != "" {
		var err error
		if users, err = readUsers(usersFile); err != nil {
			return fmt.Errorf("registry: %w", err)
		}
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	srv := &http.Server{Handler: registryHandler(users, log.New(os.Stderr, "registry ", log.LstdFlags)), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Fprintf(os.Stderr, "registry: serving on %s (basic auth: %v)\n", l.Addr(), users != nil)
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("registry: %w", err)
	}
	return nil
}

// registryHandler is the distribution API, behind basic auth when users
// is not nil.
func registryHandler(users map[string]string, logger *log.Logger) http.Handler {
	h := registry.New(registry.Logger(logger))
	if users == nil {
		return h
	}
	return basicAuth(users, h)
}

// readUsers reads user:password lines (blank lines and # comments
// skipped).
func readUsers(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	users := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		u, p, ok := strings.Cut(line, ":")
		if !ok || u == "" || p == "" {
			return nil, fmt.Errorf("%s: want user:password lines", path)
		}
		users[u] = p
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("%s names no user", path)
	}
	return users, nil
}

// basicAuth lets a request through only with the basic-auth credentials of
// one of users; anything else gets the distribution API's 401 with a Basic
// challenge, which is what makes docker-style clients send the credentials
// of their docker config.
func basicAuth(users map[string]string, next http.Handler) http.Handler {
	hash := func(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if ok {
			if want, known := users[u]; known && subtle.ConstantTimeCompare(hash(p), hash(want)) == 1 {
				next.ServeHTTP(w, r)
				return
			}
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="relcap-lab"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}` + "\n"))
	})
}

// RenderDockerConfig is a docker config.json whose auths entry for host
// (host:port) carries user:password, as `docker login` writes it. Clients
// that use go-containerregistry's authn.DefaultKeychain (relcap, the lab's
// push-random) find it through DOCKER_CONFIG.
func RenderDockerConfig(host, user, password string) string {
	return mustJSON(obj{"auths": obj{host: obj{"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password))}}})
}

// writeRegistryAuth writes the registry's users file and the docker
// config that holds the same credentials (dockerDir/config.json), both
// readable by their owner only.
func writeRegistryAuth(usersFile, dockerDir, host, user, password string) error {
	if err := os.MkdirAll(filepath.Dir(usersFile), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(usersFile, []byte(user+":"+password+"\n"), 0o600); err != nil {
		return err
	}
	if err := os.MkdirAll(dockerDir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dockerDir, "config.json"), []byte(RenderDockerConfig(host, user, password)), 0o600)
}

// staticKeychain answers one registry host with one authenticator and
// every other with anonymous access.
type staticKeychain struct {
	host string
	auth authn.Authenticator
}

func (k staticKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if r.RegistryStr() == k.host {
		return k.auth, nil
	}
	return authn.Anonymous, nil
}

// registryProbe is ready when the registry answers GET /v2/ with 200 to
// the lab's credentials (and so also checks that it asks for them).
func registryProbe(base, user, password string) Probe {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v2/", nil)
		if err != nil {
			return err
		}
		req.SetBasicAuth(user, password)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s/v2/ with the lab's credentials: %s", base, resp.Status)
		}
		return nil
	}
}

// pushRandomImage pushes one small random image under every reference,
// with the credentials keychain finds, and returns its digest: the lab's
// first release, already in every environment's repository so the seeded
// Applications run a pinned digest.
func pushRandomImage(ctx context.Context, keychain authn.Keychain, refs ...string) (v1.Hash, error) {
	return pushRandomLabeled(ctx, keychain, nil, refs...)
}

// pushRandomLabeled is pushRandomImage with labels in the image's config,
// as a Dockerfile's LABEL puts them: how a drill's build tells the lab's
// image webhook that it never becomes ready (ReadinessLabel) or starts
// slowly (StartLabel).
func pushRandomLabeled(ctx context.Context, keychain authn.Keychain, labels map[string]string, refs ...string) (v1.Hash, error) {
	img, err := random.Image(1024, 1)
	if err != nil {
		return v1.Hash{}, err
	}
	if len(labels) > 0 {
		cf, err := img.ConfigFile()
		if err != nil {
			return v1.Hash{}, err
		}
		cfg := *cf.Config.DeepCopy()
		cfg.Labels = labels
		if img, err = mutate.Config(img, cfg); err != nil {
			return v1.Hash{}, err
		}
	}
	d, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	for _, r := range refs {
		ref, err := name.ParseReference(r)
		if err != nil {
			return v1.Hash{}, fmt.Errorf("image reference %s: %w", r, err)
		}
		if err := remote.Write(ref, img, remote.WithContext(ctx), remote.WithAuthFromKeychain(keychain)); err != nil {
			return v1.Hash{}, fmt.Errorf("push %s: %w", r, err)
		}
	}
	return d, nil
}
