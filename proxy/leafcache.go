package proxy

import (
	"container/list"
	"crypto/tls"
	"sync"
)

// DefaultLeafCacheSize is how many leaf certificates a Server keeps when
// Config.LeafCacheSize is zero.
const DefaultLeafCacheSize = 1024

// leafCache is a bounded LRU cache of leaf certificates by host name: goproxy's
// CertStorage for this server. Concurrent fetches of one missing host generate its
// certificate once; a failed generation is not cached.
type leafCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *leafEntry, most recently used first
	byKey map[string]*list.Element
}

type leafEntry struct {
	host string
	once sync.Once
	cert *tls.Certificate
	err  error
}

func newLeafCache(size int) *leafCache {
	return &leafCache{max: size, order: list.New(), byKey: map[string]*list.Element{}}
}

// Fetch returns the certificate for host, calling gen when it has none.
func (c *leafCache) Fetch(host string, gen func() (*tls.Certificate, error)) (*tls.Certificate, error) {
	c.mu.Lock()
	el, ok := c.byKey[host]
	if ok {
		c.order.MoveToFront(el)
	} else {
		el = c.order.PushFront(&leafEntry{host: host})
		c.byKey[host] = el
		for c.order.Len() > c.max {
			old := c.order.Back()
			c.order.Remove(old)
			delete(c.byKey, old.Value.(*leafEntry).host)
		}
	}
	e := el.Value.(*leafEntry)
	c.mu.Unlock()

	e.once.Do(func() { e.cert, e.err = gen() })
	if e.err != nil {
		c.mu.Lock()
		if cur, ok := c.byKey[host]; ok && cur == el {
			c.order.Remove(el)
			delete(c.byKey, host)
		}
		c.mu.Unlock()
	}
	return e.cert, e.err
}

// len is the number of hosts cached.
func (c *leafCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
