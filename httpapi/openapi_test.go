package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// The OpenAPI document checked as a document, against the routes, and
// against every answer the tests get: validatingTransport is the test
// clients' RoundTripper.

// spec is the parsed document, built once for the package.
var spec struct {
	once      sync.Once
	err       error
	doc       libopenapi.Document
	model     *v3.Document
	v         validator.Validator
	errSchema *base.Schema
	// ops matches a request to the document's operations: a mux with a
	// pattern per documented method and path.
	ops *http.ServeMux
	// mu serialises the validator: its caches are not documented as
	// safe for concurrent use, and the tests' clients run in parallel.
	mu sync.Mutex
}

func loadSpec(t testing.TB) {
	t.Helper()
	spec.once.Do(func() {
		spec.doc, spec.err = libopenapi.NewDocument(openAPI)
		if spec.err != nil {
			return
		}
		m, err := spec.doc.BuildV3Model()
		if err != nil {
			spec.err = err
			return
		}
		spec.model = &m.Model
		var errs []error
		spec.v, errs = validator.NewValidator(spec.doc)
		if len(errs) > 0 {
			spec.err = errors.Join(errs...)
			return
		}
		spec.errSchema = spec.model.Components.Schemas.GetOrZero("Error").Schema()
		spec.ops = http.NewServeMux()
		for path, item := range spec.model.Paths.PathItems.FromOldest() {
			for method := range item.GetOperations().FromOldest() {
				spec.ops.Handle(strings.ToUpper(method)+" "+path, http.NotFoundHandler())
			}
		}
	})
	if spec.err != nil {
		t.Fatalf("the OpenAPI document: %v", spec.err)
	}
}

// validatingTransport checks every answer against the document: an
// answer to a documented operation with the validator (status, headers,
// body schema); any other answer (an unknown path or method, or what auth
// and the rate limit answer before routing) must be a 401, 404, 405 or
// 429 whose body is the document's Error.
type validatingTransport struct {
	base http.RoundTripper
	t    testing.TB
}

func (vt *validatingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := vt.base.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	if err := checkAnswer(vt.t, r, resp); err != nil {
		vt.t.Errorf("%s %s → %d: not as the OpenAPI document says: %v", r.Method, r.URL.Path, resp.StatusCode, err)
	}
	return resp, nil
}

func checkAnswer(t testing.TB, r *http.Request, resp *http.Response) error {
	loadSpec(t)
	spec.mu.Lock()
	defer spec.mu.Unlock()
	_, pattern := spec.ops.Handler(r)
	if pattern != "" && r.Method == http.MethodHead {
		// HEAD of a GET route (the description says so): the GET's
		// statuses, no body to check.
		_, path, _ := strings.Cut(pattern, " ")
		op := spec.model.Paths.PathItems.GetOrZero(path).Get
		if op.Responses.Codes.GetOrZero(strconv.Itoa(resp.StatusCode)) == nil {
			return fmt.Errorf("status %d is not one of GET %s's", resp.StatusCode, path)
		}
		return nil
	}
	if pattern != "" {
		if ok, errs := spec.v.ValidateHttpResponse(r, resp); !ok {
			msgs := make([]string, len(errs))
			for i, e := range errs {
				msgs[i] = e.Error()
			}
			return errors.New(strings.Join(msgs, "; "))
		}
		return nil
	}
	// Not a documented operation: the description's 404 and 405, or auth
	// and the rate limit, which answer before routing.
	switch resp.StatusCode {
	case 401, 404, 405, 429:
	default:
		return fmt.Errorf("status %d for an undocumented operation", resp.StatusCode)
	}
	if resp.StatusCode == 405 && resp.Header.Get("Allow") == "" {
		return errors.New("405 without Allow")
	}
	if r.Method == http.MethodHead {
		return nil
	}
	body, err := peekBody(resp)
	if err != nil {
		return err
	}
	if ok, errs := schema_validation.NewSchemaValidator().ValidateSchemaBytes(spec.errSchema, body); !ok {
		return fmt.Errorf("body %q is not an Error: %v", body, errs)
	}
	return nil
}

// peekBody reads resp's body and puts it back.
func peekBody(resp *http.Response) ([]byte, error) {
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return b, err
}

// The document is a valid OpenAPI 3.1 document.
func TestOpenAPIDocumentIsValid31(t *testing.T) {
	loadSpec(t)
	if v := spec.doc.GetSpecInfo().Version; v != "3.1.0" {
		t.Fatalf("OpenAPI version %q, want 3.1.0", v)
	}
	if ok, errs := spec.v.ValidateDocument(); !ok {
		for _, e := range errs {
			t.Error(e)
		}
	}
	// The check can fail: the same document with a parameter whose
	// "required" is not a boolean is refused.
	broken := bytes.Replace(openAPI, []byte(`"required": true`), []byte(`"required": "yes"`), 1)
	if bytes.Equal(broken, openAPI) {
		t.Fatal("no parameter to break")
	}
	bd, err := libopenapi.NewDocument(broken)
	if err != nil {
		t.Fatal(err)
	}
	bv, errs := validator.NewValidator(bd)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if ok, _ := bv.ValidateDocument(); ok {
		t.Fatal("a document with a non-boolean required validated")
	}
	// And what GET /v1/openapi.json serves is the document, unchanged.
	ts := newServer(t, setup{})
	r := ts.send(req{method: "GET", path: "/v1/openapi.json"})
	expect(t, "GET /v1/openapi.json", r, 200, "")
	if string(r.body) != string(openAPI) {
		t.Fatal("GET /v1/openapi.json does not serve the embedded document")
	}
}

// The document describes exactly the routes the API serves, each with
// every error code the API's error map can give it.
func TestOpenAPIDocumentMatchesRoutes(t *testing.T) {
	loadSpec(t)
	ts := newServer(t, setup{})
	var served []string
	for _, rt := range ts.api.routeTable() {
		served = append(served, rt.pattern)
	}
	var documented []string
	for path, item := range spec.model.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().FromOldest() {
			if method == "options" {
				continue // CORS preflights: answered before routing (cors.go)
			}
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(served)
	slices.Sort(documented)
	if !slices.Equal(served, documented) {
		t.Fatalf("routes served:\n  %s\ndocumented:\n  %s", strings.Join(served, "\n  "), strings.Join(documented, "\n  "))
	}
	// Every code of the error map, and every code the API writes, is in
	// the Error schema's enum.
	var enum []string
	for _, v := range spec.errSchema.Properties.GetOrZero("error").Schema().Enum {
		enum = append(enum, v.Value)
	}
	for _, c := range []string{codeBadRequest, codeUnauthorized, codeNotFound, codeNotHeld, codeMethodNotAllowed,
		codeClientCanceled, codeLimitMismatch, codeAlreadyEnqueued, codeNotEnqueued, codeLeaseExpired,
		codeSessionGone, codeRateLimited, codeMaxLocks, codeMaxWaiters, codeMaxSessions, codeMaxSessionsPerIP,
		codeDraining, codeFencePersistence, codeTypeMismatch, codeInternal, codeNotLeader, codeAdminDisabled, codeUnavailable} {
		if !slices.Contains(enum, c) {
			t.Errorf("error code %q is not in the document's Error enum", c)
		}
	}
}

// The transport's check fails answers that are not as documented: it is
// what makes every other test a check of the document.
func TestValidatingTransportCatchesWrongAnswers(t *testing.T) {
	loadSpec(t)
	cases := []struct {
		name, method, path string
		status             int
		body               string
	}{
		{"a field the schema does not have", "POST", "/v1/sessions", 200, `{"session_id":"0123456789abcdef0123456789abcdef","idle_timeout_s":20,"extra":1}`},
		{"a malformed session id", "POST", "/v1/sessions", 200, `{"session_id":"XYZ","idle_timeout_s":20}`},
		{"an undocumented status", "GET", "/health", 500, `{"error":"internal"}`},
		{"an error code not in the enum", "POST", "/v1/locks/k", 503, `{"error":"no_such_code"}`},
		{"a grant without its token", "POST", "/v1/locks/k", 200, `{"status":"ok","lease_ttl_s":3}`},
		{"a 404 that is not an Error", "GET", "/nowhere", 404, `not found`},
	}
	for _, c := range cases {
		r := httptest.NewRequest(c.method, "http://x"+c.path, nil)
		resp := &http.Response{StatusCode: c.status, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(c.body)), Request: r}
		if err := checkAnswer(t, r, resp); err == nil {
			t.Errorf("%s: %s accepted", c.name, c.body)
		}
	}
	// And a right one passes.
	r := httptest.NewRequest("POST", "http://x/v1/locks/k", nil)
	body, _ := json.Marshal(grantReply{Status: "ok", Token: "0123456789abcdef0123456789abcdef", LeaseTTLS: 3})
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body)), Request: r}
	if err := checkAnswer(t, r, resp); err != nil {
		t.Fatalf("a right grant refused: %v", err)
	}
}
