package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	dockerconfig "github.com/docker/cli/cli/config"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// The lab's image webhook (issue 19) makes kwok's node fail the way a
// real kubelet would: a real kubelet cannot pull a digest its registry
// does not have, and runs an image whose own readiness probe decides
// whether it becomes Ready. kwok runs any image, so a mutating admission
// webhook asks the lab registry about every image of a Pod created in the
// app namespaces and, when the image would fail, adds the Pod annotation
// that arms the matching kwok fault stage (faults.go). The stages select on
// the Pod's own annotations, so one added at CREATE works exactly like one
// a Deployment's template carries (the e2e suite's armedBuild).
//
// relcap-lab links no Kubernetes code (TestLabLinksNoKubernetesOrArgoCD):
// the AdmissionReview and JSONPatch types below are the few fields of
// admission.k8s.io/v1 the webhook reads and writes, as plain JSON.

// Image config labels that say how the lab's node runs an image: the lab's
// stand-in for what a real image's readiness probe and start-up do.
const (
	// ReadinessLabel=never: the Pods run but never become Ready.
	ReadinessLabel = "io.relcap-lab.readiness"
	// StartLabel=slow: the Pods become Ready only after SlowStartDelay.
	StartLabel = "io.relcap-lab.start"
)

// WebhookName is the name of the lab's MutatingWebhookConfiguration and
// WebhookPath the path the apiserver posts AdmissionReviews to.
const (
	WebhookName = "relcap-lab-image-webhook"
	WebhookPath = "/mutate-pods"
)

// webhookTimeout is the apiserver's timeout for one call (timeoutSeconds
// of the configuration); registryBudget is the part of it the webhook
// spends asking the registry, so that it always answers in time.
const (
	webhookTimeout = 5 * time.Second
	registryBudget = 3 * time.Second
)

// admissionReview is admission.k8s.io/v1 AdmissionReview, the fields used.
type admissionReview struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Request    *admissionRequest  `json:"request,omitempty"`
	Response   *admissionResponse `json:"response,omitempty"`
}

type admissionRequest struct {
	UID       string           `json:"uid"`
	Kind      groupVersionKind `json:"kind"`
	Namespace string           `json:"namespace"`
	Operation string           `json:"operation"`
	Object    json.RawMessage  `json:"object"`
}

type groupVersionKind struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

type admissionResponse struct {
	UID     string `json:"uid"`
	Allowed bool   `json:"allowed"`
	// Patch is the JSONPatch, base64 in JSON as []byte is.
	Patch     []byte   `json:"patch,omitempty"`
	PatchType string   `json:"patchType,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
	Result    *status  `json:"status,omitempty"`
}

type status struct {
	Code    int    `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// pod is the part of a v1 Pod the webhook reads.
type pod struct {
	Metadata struct {
		Name         string            `json:"name"`
		GenerateName string            `json:"generateName"`
		Annotations  map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Containers []struct {
			Name  string `json:"name"`
			Image string `json:"image"`
		} `json:"containers"`
	} `json:"spec"`
}

// patchOp is one RFC 6902 JSONPatch operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// imageFate is how the lab's node will run an image, worst last.
type imageFate int

const (
	fateRuns       imageFate = iota // present, no label: kwok's pod-ready stage
	fateSlowStart                   // StartLabel=slow
	fateNeverReady                  // ReadinessLabel=never
	fatePullFails                   // no such manifest in the registry
)

// annotation is the kwok fault stage's switch for f ("" for fateRuns).
func (f imageFate) annotation() string {
	switch f {
	case fatePullFails:
		return PullFailsAnnotation
	case fateNeverReady:
		return NotReadyAnnotation
	case fateSlowStart:
		return SlowStartAnnotation
	}
	return ""
}

func (f imageFate) String() string {
	switch f {
	case fatePullFails:
		return "manifest not in the registry: the pull fails"
	case fateNeverReady:
		return ReadinessLabel + "=never: never ready"
	case fateSlowStart:
		return StartLabel + "=slow: slow start"
	}
	return "runs"
}

// WebhookReasonAnnotation is what the webhook adds next to a fault switch:
// which image decided it and why, for a person reading the Pod.
const WebhookReasonAnnotation = "relcap-lab.io/image-webhook"

// imageInspector asks the lab registry what becomes of an image. What a
// digest names never changes, so the answer for a digest that is present
// is kept for the life of the process (the lab pushes a few dozen images);
// an absent one is asked again each time, since it may be pushed later, and
// a tag (which moves) is never kept.
type imageInspector struct {
	registry string // host:port of the lab registry; other images are not looked at
	keychain authn.Keychain

	mu    sync.Mutex
	known map[string]imageFate // digest reference -> fate of a present image
}

func newImageInspector(registry string, keychain authn.Keychain) *imageInspector {
	return &imageInspector{registry: registry, keychain: keychain, known: map[string]imageFate{}}
}

// fate says what becomes of image; looked is false for an image of another
// registry, which the webhook leaves to kwok as before (the lab has no
// other registry to ask).
func (in *imageInspector) fate(ctx context.Context, image string) (f imageFate, looked bool, err error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		// The apiserver validates images only for emptiness: a name
		// no registry serves cannot be pulled either.
		return fatePullFails, true, nil
	}
	if ref.Context().RegistryStr() != in.registry {
		return fateRuns, false, nil
	}
	_, byDigest := ref.(name.Digest)
	if byDigest {
		in.mu.Lock()
		f, ok := in.known[ref.String()]
		in.mu.Unlock()
		if ok {
			return f, true, nil
		}
	}
	// No retries: the apiserver waits for this answer, and the next Pod
	// asks again anyway.
	desc, err := remote.Get(ref, remote.WithContext(ctx), remote.WithAuthFromKeychain(in.keychain), remote.WithRetryBackoff(remote.Backoff{Steps: 1}))
	if err != nil {
		if manifestUnknown(err) {
			return fatePullFails, true, nil
		}
		return fateRuns, true, err
	}
	img, err := desc.Image()
	if err != nil {
		return fateRuns, true, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return fateRuns, true, err
	}
	f = fateRuns
	switch {
	case cfg.Config.Labels[ReadinessLabel] == "never":
		f = fateNeverReady
	case cfg.Config.Labels[StartLabel] == "slow":
		f = fateSlowStart
	}
	if byDigest {
		in.mu.Lock()
		in.known[ref.String()] = f
		in.mu.Unlock()
	}
	return f, true, nil
}

// fateWithin is fate, given up when ctx ends even if the registry client
// does not notice: the answer to the apiserver never waits for it.
func (in *imageInspector) fateWithin(ctx context.Context, image string) (imageFate, bool, error) {
	type result struct {
		f      imageFate
		looked bool
		err    error
	}
	done := make(chan result, 1)
	go func() {
		f, looked, err := in.fate(ctx, image)
		done <- result{f, looked, err}
	}()
	select {
	case r := <-done:
		return r.f, r.looked, r.err
	case <-ctx.Done():
		return fateRuns, true, ctx.Err()
	}
}

// manifestUnknown is the registry saying it has no such repository or
// manifest: what makes a real kubelet's pull fail with "not found".
func manifestUnknown(err error) bool {
	var te *transport.Error
	if !errors.As(err, &te) {
		return false
	}
	if te.StatusCode == http.StatusNotFound {
		return true
	}
	for _, d := range te.Errors {
		if d.Code == transport.ManifestUnknownErrorCode || d.Code == transport.NameUnknownErrorCode {
			return true
		}
	}
	return false
}

// imageWebhook is the HTTP handler of the webhook.
type imageWebhook struct {
	inspector *imageInspector
	budget    time.Duration
	log       *log.Logger
}

func (h *imageWebhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	var review admissionReview
	if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("want an admission.k8s.io/v1 AdmissionReview with a request: %v", err), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.budget)
	defer cancel()
	resp := h.review(ctx, review.Request)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(admissionReview{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview", Response: resp})
}

// review answers one request. It always allows the Pod: a fault is a Pod
// annotation, never a refusal, since a real cluster admits a Pod whose
// image it cannot pull and fails it on the node. When the registry cannot
// be asked (down, slow, a 5xx), the Pod is admitted unchanged with a
// warning the apiserver passes on: a kwok fault stage never lets a Pod go,
// so marking it on a passing registry error would keep it failing after
// the registry is back, where a real kubelet's next pull would succeed.
func (h *imageWebhook) review(ctx context.Context, req *admissionRequest) *admissionResponse {
	resp := &admissionResponse{UID: req.UID, Allowed: true}
	if req.Kind.Kind != "Pod" || req.Operation != "CREATE" {
		return resp
	}
	var p pod
	if err := json.Unmarshal(req.Object, &p); err != nil {
		resp.Warnings = append(resp.Warnings, "relcap-lab image-webhook: the Pod does not decode ("+err.Error()+"): admitted without looking at its images")
		return resp
	}
	if len(p.Spec.Containers) == 0 {
		return resp
	}
	worst, why := fateRuns, ""
	for _, c := range p.Spec.Containers {
		f, looked, err := h.inspector.fateWithin(ctx, c.Image)
		if err != nil {
			msg := fmt.Sprintf("relcap-lab image-webhook: cannot ask the lab registry about %s (%v): admitted as if it pulls and becomes ready", c.Image, err)
			h.log.Printf("%s/%s: %s", req.Namespace, podName(p), msg)
			resp.Warnings = append(resp.Warnings, msg)
			continue
		}
		if looked && f > worst {
			worst, why = f, c.Image+": "+f.String()
		}
	}
	ops := faultPatch(p, worst, why)
	if len(ops) == 0 {
		return resp
	}
	b, err := json.Marshal(ops)
	if err != nil {
		resp.Warnings = append(resp.Warnings, "relcap-lab image-webhook: "+err.Error())
		return resp
	}
	h.log.Printf("%s/%s: %s", req.Namespace, podName(p), why)
	resp.Patch, resp.PatchType = b, "JSONPatch"
	return resp
}

func podName(p pod) string {
	if p.Metadata.Name != "" {
		return p.Metadata.Name
	}
	return p.Metadata.GenerateName + "*"
}

// faultPatch is the JSONPatch that arms f's kwok stage for p, nil when f
// needs none or p already carries that stage's annotation (a template
// annotation, as armedBuild sets, is the declared fault and stays).
//
// The stages compare the annotation with what the Pod's first container
// runs (after "@"), so that is its value even when another container's
// image decided the fault: the stage then reports every container so.
func faultPatch(p pod, f imageFate, why string) []patchOp {
	key := f.annotation()
	if key == "" {
		return nil
	}
	if _, ok := p.Metadata.Annotations[key]; ok {
		return nil
	}
	first := p.Spec.Containers[0].Image
	value := first[strings.LastIndex(first, "@")+1:]
	if p.Metadata.Annotations == nil {
		return []patchOp{{Op: "add", Path: "/metadata/annotations", Value: map[string]string{key: value, WebhookReasonAnnotation: why}}}
	}
	return []patchOp{
		{Op: "add", Path: "/metadata/annotations/" + jsonPointerEscape(key), Value: value},
		{Op: "add", Path: "/metadata/annotations/" + jsonPointerEscape(WebhookReasonAnnotation), Value: why},
	}
}

// jsonPointerEscape escapes one RFC 6901 reference token.
func jsonPointerEscape(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// serveImageWebhook serves the webhook over TLS on addr until ctx ends.
func serveImageWebhook(ctx context.Context, addr, certFile, keyFile, registry string, keychain authn.Keychain, logOut io.Writer) error {
	if certFile == "" || keyFile == "" || registry == "" {
		return usageError{errors.New("image-webhook wants --cert, --key and --registry")}
	}
	logger := log.New(logOut, "image-webhook ", log.LstdFlags)
	mux := http.NewServeMux()
	mux.Handle(WebhookPath, &imageWebhook{inspector: newImageInspector(registry, keychain), budget: registryBudget, log: logger})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("image-webhook: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: logger}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	logger.Printf("serving on %s for images of %s", l.Addr(), registry)
	if err := srv.ServeTLS(l, certFile, keyFile); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("image-webhook: %w", err)
	}
	return nil
}

// RenderWebhookConfiguration registers the webhook for Pod CREATE in the
// app namespaces only (so Argo CD's and the system's Pods never depend on
// it), reached on loopback and verified with the lab's CA.
//
// failurePolicy Fail: up starts the webhook with the registry, before the
// apiserver, and registers it before Argo CD runs, so no app Pod is ever
// created unchecked; a stopped webhook (relcap-lab stop image-webhook)
// then refuses app Pods (the ReplicaSet reports FailedCreate), as a
// cluster whose admission webhook is down does, instead of silently
// running images the registry does not have.
func RenderWebhookConfiguration(url string, caPEM []byte) string {
	var namespaces []string
	for _, env := range Envs {
		namespaces = append(namespaces, Namespace(env))
	}
	return mustJSON(obj{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
		"metadata": obj{"name": WebhookName},
		"webhooks": []obj{{
			"name":         "images.relcap-lab.io",
			"clientConfig": obj{"url": url, "caBundle": caPEM},
			"rules": []obj{{
				"operations": []string{"CREATE"}, "apiGroups": []string{""}, "apiVersions": []string{"v1"},
				"resources": []string{"pods"}, "scope": "Namespaced",
			}},
			// Namespaces get kubernetes.io/metadata.name from the
			// apiserver; a label selector has no wildcard for web-*.
			"namespaceSelector": obj{"matchExpressions": []obj{{
				"key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces,
			}}},
			"failurePolicy":           "Fail",
			"sideEffects":             "None",
			"admissionReviewVersions": []string{"v1"},
			"timeoutSeconds":          int(webhookTimeout.Seconds()),
			"reinvocationPolicy":      "Never",
		}},
	})
}

// dockerConfigKeychain is the credentials of dir/config.json for registry
// (host:port), as docker login writes them and the lab's docker config
// holds them; no file, or no entry for registry, is anonymous access.
func dockerConfigKeychain(dir, registry string) (authn.Keychain, error) {
	cf, err := dockerconfig.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("--docker-config %s: %w", dir, err)
	}
	ac, err := cf.GetAuthConfig(registry)
	if err != nil {
		return nil, fmt.Errorf("--docker-config %s: credentials for %s: %w", dir, registry, err)
	}
	if ac.Username == "" && ac.Password == "" && ac.IdentityToken == "" && ac.RegistryToken == "" {
		return staticKeychain{host: registry, auth: authn.Anonymous}, nil
	}
	return staticKeychain{host: registry, auth: authn.FromConfig(authn.AuthConfig{
		Username: ac.Username, Password: ac.Password, IdentityToken: ac.IdentityToken, RegistryToken: ac.RegistryToken,
	})}, nil
}
