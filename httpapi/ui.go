package httpapi

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"net/http"
	"strings"
)

// The observatory's page (GET /ui): one HTML document with its style and
// script inline, embedded in the binary, so that it needs no other route,
// no CDN and no network. It carries no data: its script asks the JSON
// routes for everything, with the bearer token it asks the user for when
// the server wants one. So the page itself is served without the token
// (withAuth lets uiPath through), and nothing else is.
//
// Its Content-Security-Policy allows exactly its own script and style (by
// their hashes) and requests to this origin: a key name crafted as markup
// could not run even if the script put it into the page as such (it puts
// every server string in as text).

const uiPath = "/ui"

var (
	//go:embed ui/index.html
	uiHTML string
	//go:embed ui/app.js
	uiScript string
	//go:embed ui/app.css
	uiStyle string
	// uiHot is the hot keys and latency panel, a script of its own.
	//go:embed ui/hot.js
	uiHot string

	uiPage = strings.NewReplacer("/*STYLE*/", uiStyle, "/*SCRIPT*/", uiScript, "/*HOT*/", uiHot).Replace(uiHTML)
	uiCSP  = "default-src 'none'; script-src '" + cspHash(uiScript) + "' '" + cspHash(uiHot) + "'; style-src '" + cspHash(uiStyle) +
		"'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

func cspHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// serveUI is GET /ui.
func serveUI(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(uiPage))
}
