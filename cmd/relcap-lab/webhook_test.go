package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/itchyny/gojq"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// testRegistry is the lab's registry handler (go-containerregistry's
// pkg/registry behind basic auth) in process, counting manifest requests.
type testRegistry struct {
	host      string
	keychain  authn.Keychain
	manifests atomic.Int64
}

func newTestRegistry(t *testing.T) *testRegistry {
	t.Helper()
	r := &testRegistry{}
	h := registryHandler(map[string]string{RegistryUser: "pw"}, log.New(io.Discard, "", 0))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.Contains(req.URL.Path, "/manifests/") {
			r.manifests.Add(1)
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.host = strings.TrimPrefix(srv.URL, "http://")
	r.keychain = staticKeychain{host: r.host, auth: &authn.Basic{Username: RegistryUser, Password: "pw"}}
	return r
}

// push pushes a random image with labels to repo and returns its digest
// reference.
func (r *testRegistry) push(t *testing.T, repo string, labels map[string]string) string {
	t.Helper()
	d, err := pushRandomLabeled(t.Context(), r.keychain, labels, r.host+"/"+repo+":t")
	require.NoError(t, err)
	return r.host + "/" + repo + "@" + d.String()
}

// absentDigest is a digest no registry of the test has.
const absentDigest = "sha256:0b8c1f9e4c3a2d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e"

// podReview is the recorded AdmissionReview of a ReplicaSet's Pod CREATE
// (testdata/pod-create-review.json) running image, with annotations on the
// Pod when not nil.
func podReview(t *testing.T, image string, annotations map[string]string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "pod-create-review.json"))
	require.NoError(t, err)
	b = bytes.Replace(b, []byte(`"image": "IMAGE"`), []byte(`"image": `+strconv.Quote(image)), 1)
	if annotations == nil {
		return b
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	m["request"].(map[string]any)["object"].(map[string]any)["metadata"].(map[string]any)["annotations"] = annotations
	b, err = json.Marshal(m)
	require.NoError(t, err)
	return b
}

// post sends review to the webhook's handler as the apiserver does and
// returns the decoded answer.
func post(t *testing.T, h http.Handler, review []byte) admissionReview {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, WebhookPath, bytes.NewReader(review)))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var out admissionReview
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
	require.Equal(t, "admission.k8s.io/v1", out.APIVersion)
	require.Equal(t, "AdmissionReview", out.Kind)
	require.NotNil(t, out.Response)
	require.Equal(t, "0f1c6c2e-7d1b-4a55-9a3e-2b8f5f0c9d41", out.Response.UID, "the answer names the request")
	require.True(t, out.Response.Allowed, "a Pod is never refused: its fault shows on the node")
	return out
}

// patchedPod applies the answer's JSONPatch to the review's Pod, as the
// apiserver does before storing it.
func patchedPod(t *testing.T, review []byte, resp *admissionResponse) map[string]any {
	t.Helper()
	var r struct {
		Request struct {
			Object json.RawMessage `json:"object"`
		} `json:"request"`
	}
	require.NoError(t, json.Unmarshal(review, &r))
	obj := []byte(r.Request.Object)
	if resp.Patch != nil {
		require.Equal(t, "JSONPatch", resp.PatchType)
		p, err := jsonpatch.DecodePatch(resp.Patch)
		require.NoError(t, err)
		obj, err = p.Apply(obj)
		require.NoError(t, err)
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal(obj, &m))
	return m
}

func newTestWebhook(r *testRegistry, budget time.Duration) *imageWebhook {
	return &imageWebhook{inspector: newImageInspector(r.host, r.keychain), budget: budget, log: log.New(io.Discard, "", 0)}
}

// labStages are the stages kwok runs with in a lab: writeKwokStages over
// kwok v0.8.0's own "fast" stages (copied into testdata from the module).
func labStages(t *testing.T) []string {
	t.Helper()
	files, err := writeKwokStages(filepath.Join("testdata", "kwok-v0.8.0"), filepath.Join(t.TempDir(), "stages"))
	require.NoError(t, err)
	return files
}

// matchingStages names the stages whose selector matches pod, evaluated
// as kwok v0.8.0 does (pkg/utils/expression: each key a gojq query; In and
// NotIn on string or bool results, Exists and DoesNotExist on non-null
// ones; a query error matches as no result).
func matchingStages(t *testing.T, files []string, pod map[string]any) []string {
	t.Helper()
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var st struct {
			Metadata struct{ Name string }
			Spec     struct {
				ResourceRef struct{ Kind string } `yaml:"resourceRef"`
				Selector    struct {
					MatchExpressions []struct {
						Key, Operator string
						Values        []string
					} `yaml:"matchExpressions"`
				}
			}
		}
		require.NoError(t, yaml.Unmarshal(b, &st), f)
		if st.Spec.ResourceRef.Kind != "Pod" {
			continue
		}
		all := true
		for _, e := range st.Spec.Selector.MatchExpressions {
			q, err := gojq.Parse(e.Key)
			require.NoError(t, err, "%s: %s", f, e.Key)
			code, err := gojq.Compile(q)
			require.NoError(t, err, "%s: %s", f, e.Key)
			var out []any
			failed := false
			for it := code.Run(pod); ; {
				v, ok := it.Next()
				if !ok {
					break
				}
				if _, isErr := v.(error); isErr {
					failed = true
					break
				}
				if v != nil {
					out = append(out, v)
				}
			}
			has := func() bool {
				for _, v := range out {
					switch x := v.(type) {
					case string:
						if slices.Contains(e.Values, x) {
							return true
						}
					case bool:
						if slices.Contains(e.Values, strconv.FormatBool(x)) {
							return true
						}
					}
				}
				return false
			}
			var ok bool
			switch e.Operator {
			case "In":
				ok = !failed && has()
			case "NotIn":
				ok = failed || !has()
			case "Exists":
				ok = !failed && len(out) > 0
			case "DoesNotExist":
				ok = failed || len(out) == 0
			default:
				t.Fatalf("%s: operator %q", f, e.Operator)
			}
			all = all && ok
		}
		if all {
			names = append(names, st.Metadata.Name)
		}
	}
	slices.Sort(names)
	return names
}

// TestImageWebhookArmsTheStageTheRegistryCallsFor: what the registry says
// about a Pod's image decides which kwok stage takes the Pod, through an
// annotation the stages select on, with or without other annotations on
// the Pod.
func TestImageWebhookArmsTheStageTheRegistryCallsFor(t *testing.T) {
	t.Parallel()
	r := newTestRegistry(t)
	present := r.push(t, "staging/web", nil)
	never := r.push(t, "staging/web", map[string]string{ReadinessLabel: "never", "org.opencontainers.image.title": "web"})
	slow := r.push(t, "staging/web", map[string]string{StartLabel: "slow"})
	stages := labStages(t)
	for _, tc := range []struct {
		what, image, annotation, stage string
	}{
		{"a digest the repository lacks", r.host + "/staging/web@" + absentDigest, PullFailsAnnotation, "relcap-lab-pod-image-pull-backoff"},
		{"a repository the registry lacks", r.host + "/nowhere/web@" + absentDigest, PullFailsAnnotation, "relcap-lab-pod-image-pull-backoff"},
		{"a tag the repository lacks", r.host + "/staging/web:no-such-tag", PullFailsAnnotation, "relcap-lab-pod-image-pull-backoff"},
		{"an image labelled readiness=never", never, NotReadyAnnotation, "relcap-lab-pod-not-ready"},
		{"an image labelled start=slow", slow, SlowStartAnnotation, "relcap-lab-pod-slow-ready"},
		{"an image that is there, unlabelled", present, "", "pod-ready"},
	} {
		for _, ann := range []map[string]string{nil, {"kubectl.kubernetes.io/restartedAt": "2026-12-01T16:00:00Z"}} {
			t.Run(tc.what, func(t *testing.T) {
				h := newTestWebhook(r, time.Second)
				review := podReview(t, tc.image, ann)
				out := post(t, h, review)
				require.Empty(t, out.Response.Warnings)
				pod := patchedPod(t, review, out.Response)
				got, _ := pod["metadata"].(map[string]any)["annotations"].(map[string]any)
				if tc.annotation == "" {
					require.Nil(t, out.Response.Patch, "nothing to arm")
				} else {
					// The stages compare the annotation with what the
					// first container runs after "@".
					require.Equal(t, tc.image[strings.LastIndex(tc.image, "@")+1:], got[tc.annotation])
					require.Contains(t, got[WebhookReasonAnnotation], tc.image)
				}
				for k, v := range ann {
					require.Equal(t, v, got[k], "the Pod's own annotations stay")
				}
				require.Equal(t, []string{tc.stage}, matchingStages(t, stages, pod), "the one kwok stage that takes the Pod")
			})
		}
	}
}

// A Pod whose template already arms a stage (the e2e suite's armedBuild)
// keeps it: the webhook adds nothing over a declared fault.
func TestImageWebhookKeepsADeclaredFault(t *testing.T) {
	t.Parallel()
	r := newTestRegistry(t)
	present := r.push(t, "staging/web", nil)
	digest := present[strings.LastIndex(present, "@")+1:]
	review := podReview(t, present, map[string]string{NotReadyAnnotation: digest})
	out := post(t, newTestWebhook(r, time.Second), review)
	require.Nil(t, out.Response.Patch)
	require.Equal(t, []string{"relcap-lab-pod-not-ready"}, matchingStages(t, labStages(t), patchedPod(t, review, out.Response)))

	absent := r.host + "/staging/web@" + absentDigest
	review = podReview(t, absent, map[string]string{PullFailsAnnotation: absentDigest})
	out = post(t, newTestWebhook(r, time.Second), review)
	require.Nil(t, out.Response.Patch, "no second add of the same key")
}

// Images of other registries are not the lab's to judge: kwok runs them
// as before, and the lab registry is not asked.
func TestImageWebhookLeavesOtherRegistriesAlone(t *testing.T) {
	t.Parallel()
	r := newTestRegistry(t)
	out := post(t, newTestWebhook(r, time.Second), podReview(t, "registry.example.com/web@"+absentDigest, nil))
	require.Nil(t, out.Response.Patch)
	require.Empty(t, out.Response.Warnings)
	require.Zero(t, r.manifests.Load())
}

// A present digest is asked once (what it names never changes), so the
// webhook answers the apiserver from memory for every later replica; an
// absent one is asked each time, since it may be pushed since.
func TestImageWebhookKeepsPresentDigestsOnly(t *testing.T) {
	t.Parallel()
	r := newTestRegistry(t)
	never := r.push(t, "staging/web", map[string]string{ReadinessLabel: "never"})
	h := newTestWebhook(r, time.Second)
	before := r.manifests.Load()
	for range 3 {
		out := post(t, h, podReview(t, never, nil))
		require.NotNil(t, out.Response.Patch)
	}
	require.Equal(t, before+1, r.manifests.Load(), "one manifest request for three Pods of one digest")

	before = r.manifests.Load()
	absent := r.host + "/staging/web@" + absentDigest
	for range 2 {
		post(t, h, podReview(t, absent, nil))
	}
	require.Equal(t, before+2, r.manifests.Load(), "an absent digest is asked again")
}

// A registry that fails or hangs never holds Pod creation: the Pod is
// admitted unchanged, with a warning naming the image, within the budget.
func TestImageWebhookAdmitsWithAWarningWhenTheRegistryCannotAnswer(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	for _, tc := range []struct {
		what    string
		handler http.HandlerFunc
		budget  time.Duration
		want    string
	}{
		// A registry that answers gets a budget a loaded machine under
		// -race keeps (300 ms did not); only the silent one needs to
		// run out of it.
		{"a 500", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, `{"errors":[{"code":"UNKNOWN","message":"disk full"}]}`, http.StatusInternalServerError)
		}, 1500 * time.Millisecond, "UNKNOWN: disk full"}, // the registry's own words reach the warning
		{"registry down", nil, 1500 * time.Millisecond, "connection refused"},
		{"no answer", func(w http.ResponseWriter, req *http.Request) {
			select {
			case <-release:
			case <-req.Context().Done():
			}
		}, 300 * time.Millisecond, "context deadline exceeded"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			host := strings.TrimPrefix(srv.URL, "http://")
			if tc.handler == nil {
				srv.Close() // the registry is down
			}
			h := &imageWebhook{inspector: newImageInspector(host, authn.DefaultKeychain), budget: tc.budget, log: log.New(io.Discard, "", 0)}
			start := time.Now()
			out := post(t, h, podReview(t, host+"/staging/web@"+absentDigest, nil))
			require.Less(t, time.Since(start), 2*time.Second, "within the apiserver's timeout")
			require.Nil(t, out.Response.Patch, "a registry error is not a pull failure the Pod would keep")
			require.Len(t, out.Response.Warnings, 1)
			require.Contains(t, out.Response.Warnings[0], host+"/staging/web@"+absentDigest)
			require.Contains(t, out.Response.Warnings[0], tc.want)
		})
	}
	close(release)
}

func TestImageWebhookRefusesWhatIsNotAnAdmissionReview(t *testing.T) {
	t.Parallel()
	h := newTestWebhook(newTestRegistry(t), time.Second)
	for _, body := range []string{"", "{", `{"kind":"AdmissionReview"}`} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, WebhookPath, strings.NewReader(body)))
		require.Equal(t, http.StatusBadRequest, rec.Code, body)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, WebhookPath, nil))
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
}

// jsonKeys collects every object key path of a decoded JSON value
// (arrays' elements under "[]").
func jsonKeys(v any, prefix string, into map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			into[prefix+"."+k] = true
			jsonKeys(e, prefix+"."+k, into)
		}
	case []any:
		for _, e := range x {
			jsonKeys(e, prefix+"[]", into)
		}
	}
}

// requireKnownKeys fails for any key of got that the k8s.io/api v0.31.0
// round-trip fixture of the same type (every field set) lacks: the
// hand-written JSON types spell the API's field names.
func requireKnownKeys(t *testing.T, fixture string, got any, under string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "k8s-api-v0.31.0", fixture))
	require.NoError(t, err)
	var want any
	require.NoError(t, json.Unmarshal(b, &want))
	known, have := map[string]bool{}, map[string]bool{}
	jsonKeys(want, "", known)
	jsonKeys(got, "", have)
	for k := range have {
		if strings.HasPrefix(k, under) {
			require.True(t, known[k], "%s is not a field of %s", k, fixture)
		}
	}
}

// The webhook over TLS with its certificate from the lab's PKI, verified
// with the lab's CA as the apiserver does with the caBundle.
func TestImageWebhookServesTLSWithTheLabsCertificate(t *testing.T) {
	t.Parallel()
	r := newTestRegistry(t)
	p, err := GeneratePKI(t.TempDir())
	require.NoError(t, err)
	port, err := pickPorts(1)
	require.NoError(t, err)
	addr := "127.0.0.1:" + strconv.Itoa(port[0])
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- serveImageWebhook(ctx, addr, p.WebhookCert, p.WebhookKey, r.host, r.keychain, io.Discard)
	}()
	defer func() { cancel(); require.NoError(t, <-done) }()

	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(p.CAPEM))
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	require.Eventually(t, func() bool { return httpProbe(client, "https://"+addr+"/healthz", "", "ok")(t.Context()) == nil }, 5*time.Second, 50*time.Millisecond)

	review := podReview(t, r.host+"/staging/web@"+absentDigest, nil)
	resp, err := client.Post("https://"+addr+WebhookPath, "application/json", bytes.NewReader(review))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var raw map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&raw))
	requireKnownKeys(t, "admission.k8s.io.v1.AdmissionReview.json", raw, ".response")
	answer := raw["response"].(map[string]any)
	require.Equal(t, "JSONPatch", answer["patchType"])
	patch, err := base64.StdEncoding.DecodeString(answer["patch"].(string))
	require.NoError(t, err, "the patch is base64 in JSON, as the API's []byte")
	var ops []patchOp
	require.NoError(t, json.Unmarshal(patch, &ops))
	require.Equal(t, "add", ops[0].Op)
	require.Equal(t, "/metadata/annotations", ops[0].Path)

	// The recorded request decodes into the webhook's request type.
	var rev admissionReview
	require.NoError(t, json.Unmarshal(review, &rev))
	require.Equal(t, groupVersionKind{Version: "v1", Kind: "Pod"}, rev.Request.Kind)
	require.Equal(t, "CREATE", rev.Request.Operation)
	require.Equal(t, "web-staging", rev.Request.Namespace)
	var req map[string]any
	require.NoError(t, json.Unmarshal(review, &req))
	requireKnownKeys(t, "admission.k8s.io.v1.AdmissionReview.json", req, ".request.u")
}

func TestWebhookConfigurationRegistersPodCreateInTheAppNamespaces(t *testing.T) {
	t.Parallel()
	ca := []byte("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")
	var cfg map[string]any
	require.NoError(t, json.Unmarshal([]byte(RenderWebhookConfiguration("https://127.0.0.1:9443"+WebhookPath, ca)), &cfg))
	requireKnownKeys(t, "admissionregistration.k8s.io.v1.MutatingWebhookConfiguration.json", cfg, ".webhooks")
	require.Equal(t, "admissionregistration.k8s.io/v1", cfg["apiVersion"])
	require.Equal(t, "MutatingWebhookConfiguration", cfg["kind"])
	w := cfg["webhooks"].([]any)[0].(map[string]any)
	cc := w["clientConfig"].(map[string]any)
	require.Equal(t, "https://127.0.0.1:9443/mutate-pods", cc["url"])
	got, err := base64.StdEncoding.DecodeString(cc["caBundle"].(string))
	require.NoError(t, err)
	require.Equal(t, ca, got, "caBundle is the lab's CA")
	require.Equal(t, "Fail", w["failurePolicy"])
	require.Equal(t, "None", w["sideEffects"])
	require.Equal(t, []any{"v1"}, w["admissionReviewVersions"])
	require.Equal(t, float64(5), w["timeoutSeconds"])
	rule := w["rules"].([]any)[0].(map[string]any)
	require.Equal(t, []any{"CREATE"}, rule["operations"])
	require.Equal(t, []any{""}, rule["apiGroups"])
	require.Equal(t, []any{"pods"}, rule["resources"])
	sel := w["namespaceSelector"].(map[string]any)["matchExpressions"].([]any)[0].(map[string]any)
	require.Equal(t, "kubernetes.io/metadata.name", sel["key"])
	require.Equal(t, "In", sel["operator"])
	require.Equal(t, []any{"web-staging", "web-prod"}, sel["values"])
	require.Less(t, registryBudget, webhookTimeout, "the webhook answers before the apiserver gives up")
}

// push-random --label puts the labels in the image's config; a label
// without = is a usage error. Not parallel: it sets DOCKER_CONFIG.
func TestPushRandomWithLabels(t *testing.T) {
	r := newTestRegistry(t)
	docker := t.TempDir()
	require.NoError(t, writeRegistryAuth(filepath.Join(docker, "users"), docker, r.host, RegistryUser, "pw"))
	t.Setenv("DOCKER_CONFIG", docker)
	var out, errOut bytes.Buffer
	ref := r.host + "/ci/web:" + UnreadyTag
	require.NoError(t, run(t.Context(), []string{"push-random", "--label", ReadinessLabel + "=never", "--label", "team=web", ref}, &out, &errOut), errOut.String())
	d, err := name.NewDigest(r.host + "/ci/web@" + strings.TrimSpace(out.String()))
	require.NoError(t, err)
	img, err := remote.Image(d, remote.WithAuthFromKeychain(r.keychain))
	require.NoError(t, err)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	require.Equal(t, map[string]string{ReadinessLabel: "never", "team": "web"}, cf.Config.Labels)

	// What the webhook makes of it, reading the same docker config.
	kc, err := dockerConfigKeychain(docker, r.host)
	require.NoError(t, err)
	f, looked, err := newImageInspector(r.host, kc).fate(t.Context(), d.String())
	require.NoError(t, err)
	require.True(t, looked)
	require.Equal(t, fateNeverReady, f)

	err = run(t.Context(), []string{"push-random", "--label", "novalue", ref}, &out, &errOut)
	require.Equal(t, 2, exitCode(err))
	require.Contains(t, errOut.String(), "want K=V")
}

// Without credentials in the docker config the webhook asks anonymously,
// and the lab's registry refuses: an error (a warning), not "absent".
func TestImageWebhookWithoutCredentialsIsARegistryError(t *testing.T) {
	t.Parallel()
	r := newTestRegistry(t)
	present := r.push(t, "staging/web", nil)
	kc, err := dockerConfigKeychain(t.TempDir(), r.host)
	require.NoError(t, err)
	_, _, err = newImageInspector(r.host, kc).fate(t.Context(), present)
	require.ErrorContains(t, err, "UNAUTHORIZED")
}
