package prestart

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// unmarshal is encoding/json's reading of a record, as Decode did before decodeJSON:
// unknown fields and trailing data refused.
func unmarshal(b []byte) (*Record, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var r Record
	if err := d.Decode(&r); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errTrailing
	}
	return &r, nil
}

var errTrailing = json.Unmarshal([]byte("x"), new(any))

// oddRecord has what the encoder escapes or writes in full: quotes, backslashes,
// control characters, HTML's <>&, U+2028, non-ASCII, binary content, empty lists.
func oddRecord() *Record {
	r := baseRecord()
	r.Argv = append(r.Argv, "a\"b\\c\n\t\x01<>&\u2028\u2029é日本/", "")
	r.Env = append(r.Env, Env{Name: "X", Kind: EnvPlain, Value: "q\"\\\r\x1f\u00e9\U0001F600"})
	for i := range r.Files {
		if r.Files[i].Kind == KindContent {
			r.Files[i].Content = []byte{0, 1, 2, 0xff, '"', '\\', '\n'}
		}
	}
	return r
}

// decodeJSON reads what Encode writes as encoding/json does, and accepts nothing
// encoding/json would read otherwise: every record it accepts from a mutated
// encoding (a byte replaced, removed, the text cut short) is also encoding/json's
// reading of it.
func TestDecodeJSONSubset(t *testing.T) {
	empty := baseRecord()
	empty.Env, empty.Files, empty.TmpBase = nil, nil, ""
	for _, r := range []*Record{baseRecord(), oddRecord(), empty} {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeJSON(b)
		if err != nil {
			t.Fatalf("decodeJSON(%s): %v", b, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Errorf("decodeJSON:\n%+v\nwant\n%+v", got, r)
		}
		indented, _ := json.MarshalIndent(r, " ", "\t")
		if got, err := decodeJSON(indented); err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("indented: %v\n%+v", err, got)
		}
	}
	b, _ := json.Marshal(oddRecord())
	accepted, checked := 0, 0
	check := func(m []byte) {
		checked++
		got, err := decodeJSON(m)
		if err != nil {
			return
		}
		accepted++
		want, jerr := unmarshal(m)
		if jerr != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("decodeJSON accepted %q as\n%+v\nencoding/json: %v\n%+v", m, got, jerr, want)
		}
	}
	for i := range b {
		check(b[:i])
		check(append(append([]byte{}, b[:i]...), b[i+1:]...))
		for _, c := range []byte{'"', '\\', ',', ':', '{', '}', '[', ']', ' ', '0', '9', '-', '.', 'e', 'n', 'u', 'x', 'A', 0, 0x1f, 0x7f, 0xc3, 0xff} {
			m := append([]byte{}, b...)
			m[i] = c
			check(m)
		}
	}
	t.Logf("%d of %d mutated encodings accepted, each as encoding/json reads it", accepted, checked)
}

// What decodeJSON refuses that json.Unmarshal would take: Marshal never writes it.
func TestDecodeJSONStrict(t *testing.T) {
	good, _ := json.Marshal(baseRecord())
	edit := func(old, new string) []byte {
		if !bytes.Contains(good, []byte(old)) {
			t.Fatalf("%q not in the record", old)
		}
		return bytes.Replace(good, []byte(old), []byte(new), 1)
	}
	for name, b := range map[string][]byte{
		"a name in another case": edit(`"Version":2`, `"version":2`),
		"a field twice":          edit(`"Version":2`, `"Version":2,"Version":2`),
		"a fraction":             edit(`"Version":2`, `"Version":2.0`),
		"an exponent":            edit(`"Version":2`, `"Version":2e0`),
		"a null string":          edit(`"TmpBase":"/home/u/.local/state/devsandbox/app-1/tmp"`, `"TmpBase":null`),
		"a lone surrogate":       edit(`"Bwrap":"/usr/bin/bwrap"`, `"Bwrap":"/usr/bin/bwrap\ud800"`),
		"invalid UTF-8":          edit(`"Bwrap":"/usr/bin/bwrap"`, "\"Bwrap\":\"/usr/bin/bwrap\xff\""),
		"an unknown field":       edit(`"Version":2`, `"Version":2,"Extra":true`),
		"trailing data":          append(append([]byte{}, good...), `{}`...),
		"a padded content":       edit(`"Kind":"content","Content":"`, `"Kind":"content","Content":"=`),
	} {
		if r, err := decodeJSON(b); err == nil {
			t.Errorf("%s: decodeJSON accepted %s as %+v", name, b, r)
		}
	}
}
