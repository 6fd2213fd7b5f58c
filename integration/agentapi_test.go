//go:build integration

package integration

import (
	"compress/gzip"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// stubAPI is a small, honest subset of the model APIs the agents speak, served over
// HTTPS on an outside host: Anthropic's Messages API, OpenAI's Responses and Chat
// Completions APIs and Gemini's generateContent, each streaming as the agents ask.
//
// A conversation has two turns. While no tool result is in the request, the answer
// asks the agent to run cmd with the shell tool the request offers (found by its
// schema: a "command" or "cmd" string, or an argv array); once the tool's output is
// there, the answer is text holding stubReply. Requests that offer no shell tool (an
// agent's side calls: titles, routing) get the text answer at once.
type stubAPI struct {
	cmd string

	mu   sync.Mutex
	reqs []stubRequest
}

// stubReply is the text the stub answers with once the tool has run.
const stubReply = "STUBREPLY-7f3a"

// stubRequest is one request the stub received.
type stubRequest struct {
	Path   string
	Header http.Header
	Body   string
	Tools  []string // the tools it offered, by name
}

// offered records the tools the latest request offered, for failure messages.
func (s *stubAPI) offered(i int, ts []toolSchema) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range ts {
		s.reqs[i].Tools = append(s.reqs[i].Tools, t.name)
	}
}

func (s *stubAPI) requests() []stubRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

func (s *stubAPI) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = nil
}

func (s *stubAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := decodeBody(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnsupportedMediaType)
		return
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, stubRequest{Path: r.URL.Path, Header: r.Header.Clone(), Body: string(body)})
	i := len(s.reqs) - 1
	s.mu.Unlock()
	var req map[string]any
	_ = json.Unmarshal(body, &req)
	p := r.URL.Path
	switch {
	case strings.EqualFold(r.Header.Get("Upgrade"), "websocket"):
		// A WebSocket upgrade (Codex tries one first) is not in the stub: 426 makes
		// Codex fall back to HTTP at once (a 404 it retries with backoff, ~6 s a run).
		w.WriteHeader(http.StatusUpgradeRequired)
	case r.Method != http.MethodPost && !strings.HasSuffix(p, "/models"):
		w.WriteHeader(http.StatusNotFound)
	case strings.HasSuffix(p, "/messages"):
		s.anthropic(w, i, req, string(body))
	case strings.HasSuffix(p, "/responses"):
		s.responses(w, i, req, string(body))
	case strings.HasSuffix(p, "/chat/completions"):
		s.chat(w, i, req, string(body))
	case strings.Contains(p, ":streamGenerateContent"), strings.Contains(p, ":generateContent"):
		s.gemini(w, i, req, string(body), strings.Contains(p, ":stream"))
	case strings.Contains(p, ":countTokens"):
		writeJSON(w, `{"totalTokens":1}`)
	case strings.HasSuffix(p, "/models"):
		writeJSON(w, `{"object":"list","data":[{"id":"stub-model","object":"model","created":1,"owned_by":"stub"}]}`)
	default:
		w.WriteHeader(http.StatusNotFound)
		writeJSON(w, `{"error":{"message":"not in the stub"}}`)
	}
}

// decodeBody reads a request body in the encodings the agents send: Codex compresses
// its requests with zstd.
func decodeBody(r *http.Request) ([]byte, error) {
	switch ce := r.Header.Get("Content-Encoding"); ce {
	case "", "identity":
		return io.ReadAll(r.Body)
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	case "zstd":
		zr, err := zstd.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		return io.ReadAll(zr)
	default:
		return nil, fmt.Errorf("Content-Encoding %q is not in the stub", ce)
	}
}

func writeJSON(w http.ResponseWriter, s string) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, s)
}

// sse writes server-sent events: pairs of event name ("" for none) and data.
func sse(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for i := 0; i+1 < len(events); i += 2 {
		if events[i] != "" {
			fmt.Fprintf(w, "event: %s\n", events[i])
		}
		fmt.Fprintf(w, "data: %s\n\n", events[i+1])
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// shellTool returns the name and arguments of a call of the shell tool among tools
// (name and JSON schema of each) that runs cmd, or "" when none is a shell tool.
func shellTool(tools []toolSchema, cmd string) (string, map[string]any) {
	for _, name := range []string{"Bash", "bash", "shell_command", "exec_command", "shell", "run_shell_command"} {
		for _, t := range tools {
			if t.name != name {
				continue
			}
			props, _ := t.schema["properties"].(map[string]any)
			args := map[string]any{}
			for _, k := range []string{"command", "cmd"} {
				prop, ok := props[k].(map[string]any)
				if !ok {
					continue
				}
				if prop["type"] == "array" {
					args[k] = []string{"bash", "-c", cmd}
				} else {
					args[k] = cmd
				}
				break
			}
			if len(args) == 0 {
				continue
			}
			req, _ := t.schema["required"].([]any)
			for _, r := range req {
				k, _ := r.(string)
				if _, set := args[k]; set {
					continue
				}
				if prop, ok := props[k].(map[string]any); ok && prop["type"] == "string" {
					args[k] = "stub"
				}
			}
			return name, args
		}
	}
	return "", nil
}

type toolSchema struct {
	name        string
	schema      map[string]any
	custom      bool // a freeform tool (the Responses API's type "custom")
	description string
}

// tools reads the tools a request offers from the list at key, each with its name
// and schema under the given fields (a nested object first when inner is set).
func tools(req map[string]any, key, inner, nameKey, schemaKey string) []toolSchema {
	var out []toolSchema
	list, _ := req[key].([]any)
	for _, x := range list {
		m, _ := x.(map[string]any)
		if inner != "" {
			if sub, ok := m[inner].(map[string]any); ok {
				m = sub
			} else if subs, ok := m[inner].([]any); ok { // Gemini: functionDeclarations
				for _, y := range subs {
					d, _ := y.(map[string]any)
					n, _ := d[nameKey].(string)
					sc, _ := d[schemaKey].(map[string]any)
					if sc == nil {
						sc, _ = d["parametersJsonSchema"].(map[string]any)
					}
					out = append(out, toolSchema{name: n, schema: sc})
				}
				continue
			}
		}
		n, _ := m[nameKey].(string)
		sc, _ := m[schemaKey].(map[string]any)
		out = append(out, toolSchema{name: n, schema: sc})
	}
	return out
}

func (s *stubAPI) anthropic(w http.ResponseWriter, i int, req map[string]any, body string) {
	ts := tools(req, "tools", "", "name", "input_schema")
	s.offered(i, ts)
	name, args := shellTool(ts, s.cmd)
	start := `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"stub","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}`
	if name != "" && !strings.Contains(body, `"tool_result"`) {
		sse(w, "message_start", start,
			"content_block_start", mustJSON(map[string]any{"type": "content_block_start", "index": 0,
				"content_block": map[string]any{"type": "tool_use", "id": "toolu_stub1", "name": name, "input": map[string]any{}}}),
			"content_block_delta", mustJSON(map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": mustJSON(args)}}),
			"content_block_stop", `{"type":"content_block_stop","index":0}`,
			"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":1}}`,
			"message_stop", `{"type":"message_stop"}`)
		return
	}
	if stream, _ := req["stream"].(bool); !stream {
		writeJSON(w, `{"id":"msg_1","type":"message","role":"assistant","model":"stub","content":[{"type":"text","text":"`+stubReply+`"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`)
		return
	}
	sse(w, "message_start", start,
		"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+stubReply+`"}}`,
		"content_block_stop", `{"type":"content_block_stop","index":0}`,
		"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1}}`,
		"message_stop", `{"type":"message_stop"}`)
}

func (s *stubAPI) responses(w http.ResponseWriter, i int, req map[string]any, body string) {
	usage := `"usage":{"input_tokens":1,"input_tokens_details":null,"output_tokens":1,"output_tokens_details":null,"total_tokens":2}`
	// The tools are listed in the request, or (Codex's code mode) in an input item of
	// type additional_tools, grouped in namespaces.
	var ts []toolSchema
	var walk func(list []any)
	walk = func(list []any) {
		for _, x := range list {
			m, _ := x.(map[string]any)
			if sub, ok := m["tools"].([]any); ok {
				walk(sub)
				continue
			}
			n, _ := m["name"].(string)
			sc, _ := m["parameters"].(map[string]any)
			d, _ := m["description"].(string)
			ts = append(ts, toolSchema{name: n, schema: sc, custom: m["type"] == "custom", description: d})
		}
	}
	walk(asList(req["tools"]))
	for _, in := range asList(req["input"]) {
		if m, _ := in.(map[string]any); m["type"] == "additional_tools" {
			walk(asList(m["tools"]))
		}
	}
	s.offered(i, ts)
	item := `{"type":"message","role":"assistant","id":"msg_1","content":[{"type":"output_text","text":"` + stubReply + `"}]}`
	done := strings.Contains(body, `"function_call_output"`) || strings.Contains(body, `"custom_tool_call_output"`)
	if name, args := shellTool(ts, s.cmd); name != "" && !done {
		item = mustJSON(map[string]any{"type": "function_call", "id": "fc_1", "call_id": "call_stub1", "name": name, "arguments": mustJSON(args)})
	} else if codeMode(ts) && !done {
		// Code mode: a custom tool exec runs JavaScript, in which the shell is
		// tools.exec_command({cmd}).
		js := "const r = await tools.exec_command({cmd: " + mustJSON(s.cmd) + "});\ntext(r);\n"
		item = mustJSON(map[string]any{"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_stub1", "name": "exec", "input": js})
	}
	sse(w, "response.created", `{"type":"response.created","response":{"id":"resp_1"}}`,
		"response.output_item.done", `{"type":"response.output_item.done","item":`+item+`}`,
		"response.completed", `{"type":"response.completed","response":{"id":"resp_1",`+usage+`}}`)
}

// codeMode reports whether ts has Codex's exec tool, a custom (freeform) tool whose
// JavaScript reaches the shell through tools.exec_command.
func codeMode(ts []toolSchema) bool {
	for _, t := range ts {
		if t.name == "exec" && t.custom && strings.Contains(t.description, "tools.exec_command") {
			return true
		}
	}
	return false
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func (s *stubAPI) chat(w http.ResponseWriter, i int, req map[string]any, body string) {
	chunk := func(delta, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"stub-model","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
	}
	usage := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"stub-model","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	ts := tools(req, "tools", "function", "name", "parameters")
	s.offered(i, ts)
	name, args := shellTool(ts, s.cmd)
	if name != "" && !strings.Contains(body, `"role":"tool"`) {
		call := mustJSON(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": "call_stub1", "type": "function",
			"function": map[string]any{"name": name, "arguments": mustJSON(args)}}}})
		sse(w, "", chunk(call, ""), "", chunk(`{}`, "tool_calls"), "", usage, "", "[DONE]")
		return
	}
	sse(w, "", chunk(`{"role":"assistant","content":"`+stubReply+`"}`, ""), "", chunk(`{}`, "stop"), "", usage, "", "[DONE]")
}

func (s *stubAPI) gemini(w http.ResponseWriter, i int, req map[string]any, body string, stream bool) {
	usage := `"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":1,"totalTokenCount":2}`
	part := `{"text":"` + stubReply + `"}`
	// A side call that asks for JSON (Gemini CLI's routing and checks) gets an object
	// of its schema.
	if gc, _ := req["generationConfig"].(map[string]any); gc["responseMimeType"] == "application/json" {
		sc, _ := gc["responseJsonSchema"].(map[string]any)
		if sc == nil {
			sc, _ = gc["responseSchema"].(map[string]any)
		}
		part = mustJSON(map[string]any{"text": mustJSON(fillSchema(sc))})
	}
	ts := tools(req, "tools", "functionDeclarations", "name", "parameters")
	s.offered(i, ts)
	name, args := shellTool(ts, s.cmd)
	if name != "" && !strings.Contains(body, `"functionResponse"`) {
		part = mustJSON(map[string]any{"functionCall": map[string]any{"name": name, "args": args}})
	}
	resp := `{"candidates":[{"content":{"role":"model","parts":[` + part + `]},"finishReason":"STOP","index":0}],` + usage + `}`
	if !stream {
		writeJSON(w, resp)
		return
	}
	sse(w, "", resp)
}

// serveStub serves the stub API on o's port 443 with a certificate from ca.
func serveStub(t *testing.T, o *outside, ca *testCA, cmd string) *stubAPI {
	t.Helper()
	s := &stubAPI{cmd: cmd}
	srv := &http.Server{Handler: s, ErrorLog: log.New(io.Discard, "", 0)}
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{ca.issue(t, o.addr)}}
	go srv.ServeTLS(listenIn(t, o.ns, o.addr+":443"), "", "")
	t.Cleanup(func() { srv.Close() })
	return s
}

// fillSchema returns a value of the JSON schema sc (OpenAPI or JSON Schema types): each
// required property with a value of its type.
func fillSchema(sc map[string]any) any {
	t, _ := sc["type"].(string)
	switch strings.ToLower(t) {
	case "string":
		if enum, _ := sc["enum"].([]any); len(enum) > 0 {
			return enum[0]
		}
		return "stub"
	case "integer", "number":
		return 1
	case "boolean":
		return false
	case "array":
		return []any{}
	}
	out := map[string]any{}
	props, _ := sc["properties"].(map[string]any)
	req, _ := sc["required"].([]any)
	for _, r := range req {
		k, _ := r.(string)
		p, _ := props[k].(map[string]any)
		out[k] = fillSchema(p)
	}
	return out
}
