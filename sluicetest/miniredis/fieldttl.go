package miniredis

// Hash field TTLs (miniredis's HExpire, HSetEX, HTTL, HPersist). Sluice
// answers as Redis 7.0, which has no HEXPIRE, so the fields' expiry times
// are kept here, on the server's clock, and a field whose time is up is
// deleted (HDEL) when the clock is moved (FastForward, SetTime) or a
// direct helper reads the hash, as miniredis removes them.

import "time"

type fieldKey struct {
	db         int
	key, field string
}

// setFieldTTL sets (at > 0, server clock ms) or clears a field's expiry.
func (m *Miniredis) setFieldTTL(db int, key, field string, at int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fk := fieldKey{db, key, field}
	if at == 0 {
		delete(m.fieldTTLs, fk)
		return
	}
	if m.fieldTTLs == nil {
		m.fieldTTLs = map[fieldKey]int64{}
	}
	m.fieldTTLs[fk] = at
}

// clearFieldTTLs forgets the field expiries of database db (-1: all).
func (m *Miniredis) clearFieldTTLs(db int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for fk := range m.fieldTTLs {
		if db < 0 || fk.db == db {
			delete(m.fieldTTLs, fk)
		}
	}
}

// expireFields deletes the hash fields whose time is up.
func (m *Miniredis) expireFields() {
	m.mu.Lock()
	if len(m.fieldTTLs) == 0 {
		m.mu.Unlock()
		return
	}
	now := m.s.Server().Keyspace().Now()
	var due []fieldKey
	for fk, at := range m.fieldTTLs {
		if at <= now {
			due = append(due, fk)
			delete(m.fieldTTLs, fk)
		}
	}
	m.mu.Unlock()
	for _, fk := range due {
		m.s.DoIn(fk.db, "HDEL", fk.key, fk.field)
	}
}

func (m *Miniredis) fieldTTL(db int, key, field string) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.fieldTTLs[fieldKey{db, key, field}]
	return at, ok
}

// HExpire sets a TTL on a hash field. Returns true if the field exists.
func (m *Miniredis) HExpire(key, field string, ttl time.Duration) bool {
	return m.selected().HExpire(key, field, ttl)
}

// HExpire sets a TTL on a hash field. Returns true if the field exists.
func (db *RedisDB) HExpire(key, field string, ttl time.Duration) bool {
	if n, _ := db.int("HEXISTS", key, field); n != 1 {
		return false
	}
	db.master.setFieldTTL(db.id, key, field, db.master.s.Server().Keyspace().Now()+ttl.Milliseconds())
	db.master.expireFields()
	return true
}

// HPersist removes a TTL from a hash field. Returns true if there was a TTL.
func (m *Miniredis) HPersist(key, field string) bool { return m.selected().HPersist(key, field) }

// HPersist removes a TTL from a hash field. Returns true if there was a TTL.
func (db *RedisDB) HPersist(key, field string) bool {
	db.master.expireFields()
	if _, ok := db.master.fieldTTL(db.id, key, field); !ok {
		return false
	}
	db.master.setFieldTTL(db.id, key, field, 0)
	return true
}

// HTTL returns the remaining TTL of a hash field. Returns 0 if no TTL.
func (m *Miniredis) HTTL(key, field string) time.Duration { return m.selected().HTTL(key, field) }

// HTTL returns the remaining TTL of a hash field. Returns 0 if no TTL.
func (db *RedisDB) HTTL(key, field string) time.Duration {
	db.master.expireFields()
	at, ok := db.master.fieldTTL(db.id, key, field)
	if !ok {
		return 0
	}
	if n, _ := db.int("HEXISTS", key, field); n != 1 {
		db.master.setFieldTTL(db.id, key, field, 0) // deleted by a client
		return 0
	}
	return time.Duration(at-db.master.s.Server().Keyspace().Now()) * time.Millisecond
}

// HSetEX sets hash fields with a TTL.
func (m *Miniredis) HSetEX(key string, ttl time.Duration, fv ...string) {
	m.selected().HSetEX(key, ttl, fv...)
}

// HSetEX sets hash fields with a TTL.
func (db *RedisDB) HSetEX(key string, ttl time.Duration, fv ...string) {
	db.HSet(key, fv...)
	at := db.master.s.Server().Keyspace().Now() + ttl.Milliseconds()
	for i := 0; i+1 < len(fv); i += 2 {
		db.master.setFieldTTL(db.id, key, fv[i], at)
	}
	db.master.expireFields()
}
