package miniredis

// Commands to modify and query the databases directly, without a client:
// each runs the real command on the server, in the database's number.

import (
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"
)

var (
	// ErrKeyNotFound is returned when a key doesn't exist.
	ErrKeyNotFound = errors.New(msgKeyNotFound)

	// ErrWrongType when a key is not the right type.
	ErrWrongType = errors.New(msgWrongType)

	// ErrNotValidHllValue when a key is not a valid HyperLogLog string value.
	ErrNotValidHllValue = errors.New(msgNotValidHllValue)

	// ErrIntValueError can returned by INCRBY
	ErrIntValueError = errors.New(msgInvalidInt)

	// ErrIntValueOverflowError can be returned by INCR, DECR, INCRBY, DECRBY
	ErrIntValueOverflowError = errors.New(msgIntOverflow)

	// ErrFloatValueError can returned by INCRBYFLOAT
	ErrFloatValueError = errors.New(msgInvalidFloat)
)

const (
	msgWrongType        = "WRONGTYPE Operation against a key holding the wrong kind of value"
	msgNotValidHllValue = "WRONGTYPE Key is not a valid HyperLogLog string value."
	msgInvalidInt       = "ERR value is not an integer or out of range"
	msgIntOverflow      = "ERR increment or decrement would overflow"
	msgInvalidFloat     = "ERR value is not a valid float"
	msgKeyNotFound      = "ERR no such key"
)

// RedisDB holds a single (numbered) Redis database.
type RedisDB struct {
	master *Miniredis
	id     int // SwapDB exchanges the ids of two RedisDBs, as their data
}

// do runs a command in the database and maps the server's error replies to
// the package's errors.
func (db *RedisDB) do(args ...string) (any, error) {
	m := db.master
	m.mu.Lock()
	id := db.id
	m.mu.Unlock()
	v, err := m.s.DoIn(id, args...)
	if err != nil {
		return nil, mapError(err)
	}
	return v, nil
}

func mapError(err error) error {
	msg := err.Error()
	switch {
	case msg == msgNotValidHllValue || strings.HasPrefix(msg, "WRONGTYPE Key is not a valid HyperLogLog"):
		return ErrNotValidHllValue
	case strings.HasPrefix(msg, "WRONGTYPE"):
		return ErrWrongType
	case msg == msgInvalidInt || msg == "ERR hash value is not an integer":
		return ErrIntValueError
	case msg == msgIntOverflow:
		return ErrIntValueOverflowError
	case msg == msgInvalidFloat || msg == "ERR hash value is not a float":
		return ErrFloatValueError
	}
	return errors.New(msg)
}

func (db *RedisDB) int(args ...string) (int, error) {
	v, err := db.do(args...)
	if err != nil {
		return 0, err
	}
	n, _ := v.(int64)
	return int(n), nil
}

// str runs a command with a bulk string reply; ok is false for a nil one.
func (db *RedisDB) str(args ...string) (string, error) {
	v, err := db.do(args...)
	if err != nil {
		return "", err
	}
	if v == nil {
		return "", ErrKeyNotFound
	}
	s, _ := v.(string)
	return s, nil
}

func (db *RedisDB) strs(args ...string) ([]string, error) {
	v, err := db.do(args...)
	if err != nil {
		return nil, err
	}
	a, _ := v.([]any)
	out := make([]string, 0, len(a))
	for _, x := range a {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out, nil
}

// check returns ErrKeyNotFound when k does not exist and ErrWrongType when
// it is not of type want.
func (db *RedisDB) check(k, want string) error {
	switch t := db.Type(k); t {
	case "":
		return ErrKeyNotFound
	case want:
		return nil
	}
	return ErrWrongType
}

// notOther returns ErrWrongType when k exists with a type other than want.
func (db *RedisDB) notOther(k, want string) error {
	if t := db.Type(k); t != "" && t != want {
		return ErrWrongType
	}
	return nil
}

func itoa(i int) string { return strconv.Itoa(i) }

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Keys returns all keys from the selected database, sorted.
func (m *Miniredis) Keys() []string { return m.selected().Keys() }

// Keys returns all keys, sorted.
func (db *RedisDB) Keys() []string {
	keys, _ := db.strs("KEYS", "*")
	sort.Strings(keys)
	return keys
}

// FlushAll removes all keys from all databases.
func (m *Miniredis) FlushAll() {
	m.s.DoIn(0, "FLUSHALL")
	m.clearFieldTTLs(-1)
}

// FlushDB removes all keys from the selected database.
func (m *Miniredis) FlushDB() { m.selected().FlushDB() }

// FlushDB removes all keys.
func (db *RedisDB) FlushDB() {
	db.do("FLUSHDB")
	db.master.clearFieldTTLs(db.id)
}

// Get returns string keys added with SET.
func (m *Miniredis) Get(k string) (string, error) { return m.selected().Get(k) }

// Get returns a string key.
func (db *RedisDB) Get(k string) (string, error) {
	if err := db.check(k, "string"); err != nil {
		return "", err
	}
	return db.str("GET", k)
}

// Set sets a string key. Removes expire.
func (m *Miniredis) Set(k, v string) error { return m.selected().Set(k, v) }

// Set sets a string key. Removes expire.
// Unlike redis the key can't be an existing non-string key.
func (db *RedisDB) Set(k, v string) error {
	if err := db.notOther(k, "string"); err != nil {
		return err
	}
	_, err := db.do("SET", k, v)
	return err
}

// Incr changes a int string value by delta.
func (m *Miniredis) Incr(k string, delta int) (int, error) { return m.selected().Incr(k, delta) }

// Incr changes a int string value by delta.
func (db *RedisDB) Incr(k string, delta int) (int, error) {
	return db.int("INCRBY", k, itoa(delta))
}

// IncrByFloat increments the float value of a key by the given delta.
// is an alias for Miniredis.Incrfloat
func (m *Miniredis) IncrByFloat(k string, delta float64) (float64, error) {
	return m.Incrfloat(k, delta)
}

// Incrfloat changes a float string value by delta.
func (m *Miniredis) Incrfloat(k string, delta float64) (float64, error) {
	return m.selected().Incrfloat(k, delta)
}

// Incrfloat changes a float string value by delta.
func (db *RedisDB) Incrfloat(k string, delta float64) (float64, error) {
	s, err := db.str("INCRBYFLOAT", k, ftoa(delta))
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(s, 64)
}

// List returns the list k, or an error if it's not there or something else.
// This is the same as the Redis command `LRANGE 0 -1`, but you can do your own
// range-ing.
func (m *Miniredis) List(k string) ([]string, error) { return m.selected().List(k) }

// List returns the list k, or an error if it's not there or something else.
// This is the same as the Redis command `LRANGE 0 -1`, but you can do your own
// range-ing.
func (db *RedisDB) List(k string) ([]string, error) {
	if err := db.check(k, "list"); err != nil {
		return nil, err
	}
	return db.strs("LRANGE", k, "0", "-1")
}

// Lpush prepends one value to a list. Returns the new length.
func (m *Miniredis) Lpush(k, v string) (int, error) { return m.selected().Lpush(k, v) }

// Lpush prepends one value to a list. Returns the new length.
func (db *RedisDB) Lpush(k, v string) (int, error) { return db.int("LPUSH", k, v) }

// Lpop removes and returns the first element in a list.
func (m *Miniredis) Lpop(k string) (string, error) { return m.selected().Lpop(k) }

// Lpop removes and returns the first element in a list.
func (db *RedisDB) Lpop(k string) (string, error) {
	if err := db.check(k, "list"); err != nil {
		return "", err
	}
	return db.str("LPOP", k)
}

// RPush appends one or multiple values to a list. Returns the new length.
// An alias for Push
func (m *Miniredis) RPush(k string, v ...string) (int, error) { return m.Push(k, v...) }

// Push add element at the end. Returns the new length.
func (m *Miniredis) Push(k string, v ...string) (int, error) { return m.selected().Push(k, v...) }

// Push add element at the end. Is called RPUSH in redis. Returns the new length.
func (db *RedisDB) Push(k string, v ...string) (int, error) {
	if len(v) == 0 {
		if err := db.notOther(k, "list"); err != nil {
			return 0, err
		}
		return db.int("LLEN", k)
	}
	return db.int(append([]string{"RPUSH", k}, v...)...)
}

// RPop is an alias for Pop
func (m *Miniredis) RPop(k string) (string, error) { return m.Pop(k) }

// Pop removes and returns the last element. Is called RPOP in Redis.
func (m *Miniredis) Pop(k string) (string, error) { return m.selected().Pop(k) }

// Pop removes and returns the last element. Is called RPOP in Redis.
func (db *RedisDB) Pop(k string) (string, error) {
	if err := db.check(k, "list"); err != nil {
		return "", err
	}
	return db.str("RPOP", k)
}

// SAdd adds keys to a set. Returns the number of new keys.
// Alias for SetAdd
func (m *Miniredis) SAdd(k string, elems ...string) (int, error) { return m.SetAdd(k, elems...) }

// SetAdd adds keys to a set. Returns the number of new keys.
func (m *Miniredis) SetAdd(k string, elems ...string) (int, error) {
	return m.selected().SetAdd(k, elems...)
}

// SetAdd adds keys to a set. Returns the number of new keys.
func (db *RedisDB) SetAdd(k string, elems ...string) (int, error) {
	if len(elems) == 0 {
		return 0, db.notOther(k, "set")
	}
	return db.int(append([]string{"SADD", k}, elems...)...)
}

// SMembers returns all keys in a set, sorted.
// Alias for Members.
func (m *Miniredis) SMembers(k string) ([]string, error) { return m.Members(k) }

// Members returns all keys in a set, sorted.
func (m *Miniredis) Members(k string) ([]string, error) { return m.selected().Members(k) }

// Members gives all set keys. Sorted.
func (db *RedisDB) Members(k string) ([]string, error) {
	if err := db.check(k, "set"); err != nil {
		return nil, err
	}
	members, err := db.strs("SMEMBERS", k)
	sort.Strings(members)
	return members, err
}

// SIsMember tells if value is in the set.
// Alias for IsMember
func (m *Miniredis) SIsMember(k, v string) (bool, error) { return m.IsMember(k, v) }

// IsMember tells if value is in the set.
func (m *Miniredis) IsMember(k, v string) (bool, error) { return m.selected().IsMember(k, v) }

// IsMember tells if value is in the set.
func (db *RedisDB) IsMember(k, v string) (bool, error) {
	if err := db.check(k, "set"); err != nil {
		return false, err
	}
	n, err := db.int("SISMEMBER", k, v)
	return n == 1, err
}

// SRem removes fields from a set. Returns number of deleted fields.
func (m *Miniredis) SRem(k string, fields ...string) (int, error) {
	return m.selected().SRem(k, fields...)
}

// SRem removes fields from a set. Returns number of deleted fields.
func (db *RedisDB) SRem(k string, fields ...string) (int, error) {
	if err := db.check(k, "set"); err != nil {
		return 0, err
	}
	if len(fields) == 0 {
		return 0, nil
	}
	return db.int(append([]string{"SREM", k}, fields...)...)
}

// SCard returns the number of members of a set (0 if it does not exist).
func (m *Miniredis) SCard(key string) (int, error) { return m.selected().SCard(key) }

// SCard returns the number of members of a set (0 if it does not exist).
func (db *RedisDB) SCard(key string) (int, error) { return db.int("SCARD", key) }

// SRandMember returns a random member of a set ("" if there is none).
func (m *Miniredis) SRandMember(key string) (string, error) { return m.selected().SRandMember(key) }

// SRandMember returns a random member of a set ("" if there is none).
func (db *RedisDB) SRandMember(key string) (string, error) {
	s, err := db.str("SRANDMEMBER", key)
	if err == ErrKeyNotFound {
		return "", nil
	}
	return s, err
}

// HKeys returns all (sorted) keys ('fields') for a hash key.
func (m *Miniredis) HKeys(k string) ([]string, error) { return m.selected().HKeys(k) }

// HKeys returns all (sorted) keys ('fields') for a hash key.
func (db *RedisDB) HKeys(key string) ([]string, error) {
	db.master.expireFields()
	if err := db.check(key, "hash"); err != nil {
		return nil, err
	}
	fields, err := db.strs("HKEYS", key)
	sort.Strings(fields)
	return fields, err
}

// hashAll returns a hash's fields and values.
func (db *RedisDB) hashAll(k string) map[string]string {
	a, _ := db.strs("HGETALL", k)
	out := map[string]string{}
	for i := 0; i+1 < len(a); i += 2 {
		out[a[i]] = a[i+1]
	}
	return out
}

// Del deletes a key and any expiration value. Returns whether there was a key.
func (m *Miniredis) Del(k string) bool { return m.selected().Del(k) }

// Del deletes a key and any expiration value. Returns whether there was a key.
func (db *RedisDB) Del(k string) bool {
	n, _ := db.int("DEL", k)
	return n == 1
}

// Unlink deletes a key and any expiration value. Returns where there was a key.
func (m *Miniredis) Unlink(k string) bool { return m.Del(k) }

// Unlink deletes a key and any expiration value. Returns where there was a key.
func (db *RedisDB) Unlink(k string) bool {
	n, _ := db.int("UNLINK", k)
	return n == 1
}

// TTL is the left over time to live. As set via EXPIRE, PEXPIRE, EXPIREAT,
// PEXPIREAT.
// Note: this direct function returns 0 if there is no TTL set, unlike redis,
// which returns -1.
func (m *Miniredis) TTL(k string) time.Duration { return m.selected().TTL(k) }

// TTL is the left over time to live. As set via EXPIRE, PEXPIRE, EXPIREAT,
// PEXPIREAT.
// 0 if not set.
func (db *RedisDB) TTL(k string) time.Duration {
	ms, _ := db.int("PTTL", k)
	if ms < 0 {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

// SetTTL sets the TTL of a key.
func (m *Miniredis) SetTTL(k string, ttl time.Duration) { m.selected().SetTTL(k, ttl) }

// SetTTL sets the time to live of a key (to the millisecond, as PEXPIRE).
func (db *RedisDB) SetTTL(k string, ttl time.Duration) {
	db.do("PEXPIRE", k, strconv.FormatInt(ttl.Milliseconds(), 10))
}

// Type gives the type of a key, or ""
func (m *Miniredis) Type(k string) string { return m.selected().Type(k) }

// Type gives the type of a key, or ""
func (db *RedisDB) Type(k string) string {
	v, _ := db.do("TYPE", k)
	if t, _ := v.(string); t != "none" {
		return t
	}
	return ""
}

// Exists tells whether a key exists.
func (m *Miniredis) Exists(k string) bool { return m.selected().Exists(k) }

// Exists tells whether a key exists.
func (db *RedisDB) Exists(k string) bool {
	n, _ := db.int("EXISTS", k)
	return n == 1
}

// HGet returns hash keys added with HSET.
// This will return an empty string if the key is not set. Redis would return
// a nil.
// Returns empty string when the key is of a different type.
func (m *Miniredis) HGet(k, f string) string { return m.selected().HGet(k, f) }

// HGet returns hash keys added with HSET.
// Returns empty string when the key is of a different type.
func (db *RedisDB) HGet(k, f string) string {
	db.master.expireFields()
	s, _ := db.str("HGET", k, f)
	return s
}

// HSet sets hash keys.
// If there is another key by the same name it will be gone.
func (m *Miniredis) HSet(k string, fv ...string) { m.selected().HSet(k, fv...) }

// HSet sets hash keys.
// If there is another key by the same name it will be gone.
func (db *RedisDB) HSet(k string, fv ...string) {
	if db.notOther(k, "hash") != nil {
		db.Del(k)
	}
	if len(fv) < 2 {
		return
	}
	db.do(append([]string{"HSET", k}, fv[:len(fv)&^1]...)...)
	for i := 0; i+1 < len(fv); i += 2 {
		db.master.setFieldTTL(db.id, k, fv[i], 0)
	}
}

// HDel deletes a hash key.
func (m *Miniredis) HDel(k, f string) { m.selected().HDel(k, f) }

// HDel deletes a hash key.
func (db *RedisDB) HDel(k, f string) {
	db.do("HDEL", k, f)
	db.master.setFieldTTL(db.id, k, f, 0)
}

// HIncrBy increases the integer value of a hash field by delta (int).
func (m *Miniredis) HIncrBy(k, f string, delta int) (int, error) { return m.HIncr(k, f, delta) }

// HIncr increases a key/field by delta (int).
func (m *Miniredis) HIncr(k, f string, delta int) (int, error) {
	return m.selected().HIncr(k, f, delta)
}

// HIncr increases a key/field by delta (int).
func (db *RedisDB) HIncr(k, f string, delta int) (int, error) {
	return db.int("HINCRBY", k, f, itoa(delta))
}

// HIncrByFloat increases a key/field by delta (float).
func (m *Miniredis) HIncrByFloat(k, f string, delta float64) (float64, error) {
	return m.HIncrfloat(k, f, delta)
}

// HIncrfloat increases a key/field by delta (float).
func (m *Miniredis) HIncrfloat(k, f string, delta float64) (float64, error) {
	return m.selected().HIncrfloat(k, f, delta)
}

// HIncrfloat increases a key/field by delta (float).
func (db *RedisDB) HIncrfloat(k, f string, delta float64) (float64, error) {
	s, err := db.str("HINCRBYFLOAT", k, f, ftoa(delta))
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(s, 64)
}

// ZAdd adds a score,member to a sorted set.
func (m *Miniredis) ZAdd(k string, score float64, member string) (bool, error) {
	return m.selected().ZAdd(k, score, member)
}

// ZAdd adds a score,member to a sorted set. Reports whether the member
// is new.
func (db *RedisDB) ZAdd(k string, score float64, member string) (bool, error) {
	n, err := db.int("ZADD", k, ftoa(score), member)
	return n == 1, err
}

// ZMembers returns all members of a sorted set by score
func (m *Miniredis) ZMembers(k string) ([]string, error) { return m.selected().ZMembers(k) }

// ZMembers returns all members of a sorted set by score
func (db *RedisDB) ZMembers(k string) ([]string, error) {
	if err := db.check(k, "zset"); err != nil {
		return nil, err
	}
	return db.strs("ZRANGE", k, "0", "-1")
}

type zsetElem struct {
	member string
	score  float64
}

func (db *RedisDB) zsetElements(k string) []zsetElem {
	a, _ := db.strs("ZRANGE", k, "0", "-1", "WITHSCORES")
	out := make([]zsetElem, 0, len(a)/2)
	for i := 0; i+1 < len(a); i += 2 {
		f, _ := strconv.ParseFloat(a[i+1], 64)
		out = append(out, zsetElem{a[i], f})
	}
	return out
}

// SortedSet returns a raw string->float64 map.
func (m *Miniredis) SortedSet(k string) (map[string]float64, error) {
	return m.selected().SortedSet(k)
}

// SortedSet returns a raw string->float64 map.
func (db *RedisDB) SortedSet(k string) (map[string]float64, error) {
	if err := db.check(k, "zset"); err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, e := range db.zsetElements(k) {
		out[e.member] = e.score
	}
	return out, nil
}

// ZRem deletes a member. Returns whether the was a key.
func (m *Miniredis) ZRem(k, member string) (bool, error) { return m.selected().ZRem(k, member) }

// ZRem deletes a member. Returns whether the was a key.
func (db *RedisDB) ZRem(k, member string) (bool, error) {
	if err := db.check(k, "zset"); err != nil {
		return false, err
	}
	n, err := db.int("ZREM", k, member)
	return n == 1, err
}

// ZScore gives the score of a sorted set member (0 if it is not one).
func (m *Miniredis) ZScore(k, member string) (float64, error) {
	return m.selected().ZScore(k, member)
}

// ZScore gives the score of a sorted set member (0 if it is not one).
func (db *RedisDB) ZScore(k, member string) (float64, error) {
	if err := db.check(k, "zset"); err != nil {
		return 0, err
	}
	s, err := db.str("ZSCORE", k, member)
	if err == ErrKeyNotFound {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(s, 64)
}

// ZMScore gives scores of a list of members in a sorted set.
func (m *Miniredis) ZMScore(k string, members ...string) ([]float64, error) {
	return m.selected().ZMScore(k, members)
}

// ZMScore gives scores of a list of members in a sorted set (0 for those
// that are not members).
func (db *RedisDB) ZMScore(k string, members []string) ([]float64, error) {
	if err := db.check(k, "zset"); err != nil {
		return nil, err
	}
	if len(members) == 0 {
		return nil, nil
	}
	v, err := db.do(append([]string{"ZMSCORE", k}, members...)...)
	if err != nil {
		return nil, err
	}
	a, _ := v.([]any)
	out := make([]float64, len(a))
	for i, x := range a {
		if s, ok := x.(string); ok {
			out[i], _ = strconv.ParseFloat(s, 64)
		}
	}
	return out, nil
}

// StreamEntry is an entry in a stream. The ID is always of the form
// "123-123". Values is an ordered list of key-value pairs.
type StreamEntry struct {
	ID     string
	Values []string
}

// XAdd adds an entry to a stream. `id` can be left empty or be '*'.
// If a value is given normal XADD rules apply. Values should be an even
// length.
func (m *Miniredis) XAdd(k string, id string, values []string) (string, error) {
	return m.selected().XAdd(k, id, values)
}

// XAdd adds an entry to a stream. `id` can be left empty or be '*'.
// If a value is given normal XADD rules apply. Values should be an even
// length.
func (db *RedisDB) XAdd(k string, id string, values []string) (string, error) {
	if id == "" {
		id = "*"
	}
	return db.str(append([]string{"XADD", k, id}, values...)...)
}

// Stream returns a slice of stream entries. Oldest first.
func (m *Miniredis) Stream(k string) ([]StreamEntry, error) { return m.selected().Stream(k) }

// Stream returns a slice of stream entries. Oldest first.
func (db *RedisDB) Stream(key string) ([]StreamEntry, error) {
	if err := db.check(key, "stream"); err != nil {
		if err == ErrKeyNotFound {
			return nil, nil
		}
		return nil, err
	}
	v, err := db.do("XRANGE", key, "-", "+")
	if err != nil {
		return nil, err
	}
	a, _ := v.([]any)
	out := make([]StreamEntry, 0, len(a))
	for _, x := range a {
		e, _ := x.([]any)
		if len(e) != 2 {
			continue
		}
		id, _ := e[0].(string)
		fv, _ := e[1].([]any)
		se := StreamEntry{ID: id, Values: make([]string, 0, len(fv))}
		for _, f := range fv {
			s, _ := f.(string)
			se.Values = append(se.Values, s)
		}
		out = append(out, se)
	}
	return out, nil
}

// PfAdd adds keys to a hll. Returns the flag which equals to 1 if the inner hll value has been changed.
func (m *Miniredis) PfAdd(k string, elems ...string) (int, error) {
	return m.selected().HllAdd(k, elems...)
}

// HllAdd adds keys to a hll. Returns the flag which equals to true if the inner hll value has been changed.
func (db *RedisDB) HllAdd(k string, elems ...string) (int, error) {
	return db.int(append([]string{"PFADD", k}, elems...)...)
}

// PfCount returns an estimation of the amount of elements previously added to a hll.
func (m *Miniredis) PfCount(keys ...string) (int, error) { return m.selected().HllCount(keys...) }

// HllCount returns an estimation of the amount of elements previously added to a hll.
func (db *RedisDB) HllCount(keys ...string) (int, error) {
	return db.int(append([]string{"PFCOUNT"}, keys...)...)
}

// PfMerge merges all the input hlls into a hll under destKey key.
func (m *Miniredis) PfMerge(destKey string, sourceKeys ...string) error {
	return m.selected().HllMerge(destKey, sourceKeys...)
}

// HllMerge merges all the input hlls into a hll under destKey key.
func (db *RedisDB) HllMerge(destKey string, sourceKeys ...string) error {
	_, err := db.do(append([]string{"PFMERGE", destKey}, sourceKeys...)...)
	return err
}
