package config

import (
	"errors"
	"reflect"
	"testing"
)

func TestNewHost(t *testing.T) {
	noPasswd := func() ([]byte, error) { return nil, errors.New("no passwd") }
	passwd := func() ([]byte, error) {
		return []byte("root:x:0:0:root:/root:/bin/bash\nbob:x:1000:1000::/home/bob:/bin/sh\n"), nil
	}
	tests := []struct {
		name    string
		environ []string
		passwd  func() ([]byte, error)
		want    Host
	}{{
		name:    "defaults",
		environ: []string{"HOME=/home/u/", "USER=u"},
		want: Host{
			Vars: map[string]string{"HOME": "/home/u/", "USER": "u"}, Home: "/home/u", User: "u", UID: 1000, GID: 100,
			ConfigHome: "/home/u/.config", DataHome: "/home/u/.local/share", StateHome: "/home/u/.local/state",
			CacheHome: "/home/u/.cache",
		},
	}, {
		name: "XDG set, relative values ignored",
		environ: []string{"HOME=/h", "LOGNAME=l", "XDG_CONFIG_HOME=/c", "XDG_DATA_HOME=rel/data",
			"XDG_STATE_HOME=/s/", "XDG_CACHE_HOME=", "XDG_RUNTIME_DIR=/run/user/1000", "HOME=/ignored", "BROKEN"},
		want: Host{
			Vars: map[string]string{"HOME": "/h", "LOGNAME": "l", "XDG_CONFIG_HOME": "/c", "XDG_DATA_HOME": "rel/data",
				"XDG_STATE_HOME": "/s/", "XDG_CACHE_HOME": "", "XDG_RUNTIME_DIR": "/run/user/1000"},
			Home: "/h", User: "l", UID: 1000, GID: 100,
			ConfigHome: "/c", DataHome: "/h/.local/share", StateHome: "/s", CacheHome: "/h/.cache",
			RuntimeDir: "/run/user/1000",
		},
	}, {
		name:    "user from passwd",
		environ: []string{"HOME=/h", "USER=../x"},
		passwd:  passwd,
		want: Host{Vars: map[string]string{"HOME": "/h", "USER": "../x"}, Home: "/h", User: "bob", UID: 1000, GID: 100,
			ConfigHome: "/h/.config", DataHome: "/h/.local/share", StateHome: "/h/.local/state", CacheHome: "/h/.cache"},
	}, {
		name:    "user from uid",
		environ: []string{"HOME=/h"},
		want: Host{Vars: map[string]string{"HOME": "/h"}, Home: "/h", User: "1000", UID: 1000, GID: 100,
			ConfigHome: "/h/.config", DataHome: "/h/.local/share", StateHome: "/h/.local/state", CacheHome: "/h/.cache"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pw := tt.passwd
			if pw == nil {
				pw = noPasswd
			}
			got, err := newHost(tt.environ, 1000, 100, pw)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestNewHostBadHome(t *testing.T) {
	for _, environ := range [][]string{{"USER=u"}, {"HOME="}, {"HOME=relative"}} {
		_, err := HostFromEnviron(environ, 1, 1)
		ce := asConfigError(t, err)
		if ce.Source != "env HOME" || !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: got %#v", environ, ce)
		}
	}
}

func TestPasswdName(t *testing.T) {
	data := []byte("#comment:x:5:5\nroot:x:0:0:root:/root:/bin/bash\nshort:x\nbob:x:1000:1000::/home/bob:/bin/sh\nbob2:x:1000:1000::/:/\n")
	for uid, want := range map[int]string{0: "root", 1000: "bob", 5: "", 42: ""} {
		if got := passwdName(data, uid); got != want {
			t.Errorf("passwdName(%d) = %q, want %q", uid, got, want)
		}
	}
}
