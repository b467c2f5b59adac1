package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicedb/sluice/internal/redistest"
)

func aclClient(t *testing.T, addr, user, pass string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Username: user, Password: pass, Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 1})
	t.Cleanup(func() { c.Close() })
	return c
}

func aclDo(t *testing.T, c *redis.Client, args ...any) any {
	t.Helper()
	v, err := c.Do(context.Background(), args...).Result()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

func wantErr(t *testing.T, c *redis.Client, want string, args ...any) {
	t.Helper()
	_, err := c.Do(context.Background(), args...).Result()
	if err == nil || err.Error() != want {
		t.Fatalf("%v: got error %v, want %q", args, err, want)
	}
}

func TestACLUsersAndPermissions(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	admin := aclClient(t, addr, "", "")
	if got := aclDo(t, admin, "ACL", "WHOAMI"); got != "default" {
		t.Fatalf("WHOAMI = %v", got)
	}
	wantErr(t, admin, "ERR Usernames can't contain spaces or null characters", "ACL", "SETUSER", "a b")
	aclDo(t, admin, "ACL", "SETUSER", "alice", ">secret", "+get", "+set", "~obj:*")

	// New users start disabled.
	wantErr(t, admin, "WRONGPASS invalid username-password pair or user is disabled.", "AUTH", "alice", "secret")
	aclDo(t, admin, "ACL", "SETUSER", "alice", "on")

	alice := aclClient(t, addr, "alice", "secret")
	if got := aclDo(t, alice, "SET", "obj:1", "v"); got != "OK" {
		t.Fatalf("SET = %v", got)
	}
	wantErr(t, alice, "NOPERM this user has no permissions to access one of the keys used as arguments", "SET", "other", "v")
	wantErr(t, alice, "NOPERM this user has no permissions to run the 'incr' command", "INCR", "obj:1")
	wantErr(t, alice, "NOPERM this user has no permissions to run the 'acl|whoami' command", "ACL", "WHOAMI")

	// ACL LIST, GETUSER, USERS.
	list := aclDo(t, admin, "ACL", "LIST").([]any)
	if len(list) != 2 || list[1] != "user default on nopass ~* &* +@all" ||
		!strings.HasPrefix(list[0].(string), "user alice on #2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b ~obj:* resetchannels -@all ") {
		t.Fatalf("ACL LIST = %q", list)
	}
	if got := aclDo(t, admin, "ACL", "USERS"); len(got.([]any)) != 2 {
		t.Fatalf("ACL USERS = %v", got)
	}
	u := aclDo(t, admin, "ACL", "GETUSER", "alice").([]any)
	if u[0] != "flags" || u[4] != "commands" || u[6] != "keys" || u[7] != "~obj:*" || u[8] != "channels" || u[9] != "" {
		t.Fatalf("GETUSER = %q", u)
	}
	if cmds := u[5].(string); !strings.HasPrefix(cmds, "-@all") || !strings.Contains(cmds, "+get") || !strings.Contains(cmds, "+set") {
		t.Fatalf("commands = %q", cmds)
	}
	if _, err := admin.Do(context.Background(), "ACL", "GETUSER", "nobody").Result(); err != redis.Nil {
		t.Fatalf("GETUSER nobody: %v", err)
	}

	// Rule errors.
	wantErr(t, admin, "ERR Error in ACL SETUSER modifier '+nosuchcmd': Unknown command or category name in ACL", "ACL", "SETUSER", "alice", "+nosuchcmd")
	wantErr(t, admin, "ERR Error in ACL SETUSER modifier '+config|get|x': Allowing first-arg of a subcommand is not supported", "ACL", "SETUSER", "alice", "+config|get|x")
	wantErr(t, admin, "ERR Unmatched parenthesis in acl selector starting at '(+get'.", "ACL", "SETUSER", "alice", "(+get")
	wantErr(t, admin, "ERR The 'default' user cannot be removed", "ACL", "DELUSER", "default")

	// The log records the denials, newest first.
	log := aclDo(t, admin, "ACL", "LOG").([]any)
	if len(log) != 4 || log[3].([]any)[3] != "auth" {
		t.Fatalf("ACL LOG has %d entries", len(log))
	}
	e := log[0].([]any)
	if e[3] != "command" || e[5] != "toplevel" || e[7] != "acl|whoami" || e[9] != "alice" || !strings.Contains(e[13].(string), "user=alice") {
		t.Fatalf("ACL LOG entry = %q", e)
	}
	if e := log[2].([]any); e[3] != "key" || e[7] != "other" || e[9] != "alice" {
		t.Fatalf("ACL LOG key entry = %q", e)
	}
	aclDo(t, admin, "ACL", "LOG", "RESET")
	if n := len(aclDo(t, admin, "ACL", "LOG").([]any)); n != 0 {
		t.Fatalf("ACL LOG after RESET has %d entries", n)
	}

	// CLIENT LIST shows the user; deleting it closes its connections.
	if cl := aclDo(t, admin, "CLIENT", "LIST").(string); !strings.Contains(cl, "user=alice") {
		t.Fatalf("CLIENT LIST = %q", cl)
	}
	if n := aclDo(t, admin, "ACL", "DELUSER", "alice", "nobody"); n != int64(1) {
		t.Fatalf("DELUSER = %v", n)
	}
	time.Sleep(50 * time.Millisecond)
	if _, err := alice.Get(context.Background(), "obj:1").Result(); err == nil {
		t.Fatal("a deleted user's connection still works")
	}
}

func TestACLSelectorsAndKeyPermissions(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	admin := aclClient(t, addr, "", "")
	aclDo(t, admin, "ACL", "SETUSER", "rw", "on", "nopass", "+@all", "%R~read*", "%W~write*")
	rw := aclClient(t, addr, "rw", "x")
	aclDo(t, admin, "SET", "readkey", "1")
	if got := aclDo(t, rw, "GET", "readkey"); got != "1" {
		t.Fatalf("GET = %v", got)
	}
	aclDo(t, rw, "LPUSH", "writelist", "1")
	keyErr := "NOPERM this user has no permissions to access one of the keys used as arguments"
	wantErr(t, rw, keyErr, "GET", "writelist")
	wantErr(t, rw, keyErr, "SET", "readkey", "2")
	wantErr(t, rw, keyErr, "SET", "writekey", "2", "GET") // GET makes SET read the key
	aclDo(t, rw, "COPY", "readkey", "writekey")
	wantErr(t, rw, keyErr, "COPY", "writekey", "readkey")

	// DRYRUN reports why without running.
	aclDo(t, admin, "ACL", "SETUSER", "sel", "on", "nopass", "-@all", "(+get ~g*)", "(+set ~s*)")
	cases := []struct {
		args []any
		want string
	}{
		{[]any{"GET", "gkey"}, "OK"},
		{[]any{"SET", "skey", "v"}, "OK"},
		{[]any{"GET", "skey"}, "This user has no permissions to access the 'skey' key"},
		{[]any{"INCR", "gkey"}, "This user has no permissions to run the 'incr' command"},
		{[]any{"PUBLISH", "ch", "m"}, "This user has no permissions to run the 'publish' command"},
	}
	for _, tc := range cases {
		got := aclDo(t, admin, append([]any{"ACL", "DRYRUN", "sel"}, tc.args...)...)
		if got != tc.want {
			t.Errorf("DRYRUN %v = %q, want %q", tc.args, got, tc.want)
		}
	}
	wantErr(t, admin, "ERR User 'nobody' not found", "ACL", "DRYRUN", "nobody", "GET", "x")
	wantErr(t, admin, "ERR Command 'nocmd' not found", "ACL", "DRYRUN", "sel", "nocmd")
	wantErr(t, admin, "ERR wrong number of arguments for 'set' command", "ACL", "DRYRUN", "sel", "SET", "x")
	u := aclDo(t, admin, "ACL", "GETUSER", "sel").([]any)
	sels := u[11].([]any)
	if len(sels) != 2 || sels[0].([]any)[1] != "-@all +get" || sels[1].([]any)[3] != "~s*" {
		t.Fatalf("selectors = %q", sels)
	}
	aclDo(t, admin, "ACL", "SETUSER", "sel", "clearselectors")
	if u := aclDo(t, admin, "ACL", "GETUSER", "sel").([]any); len(u[11].([]any)) != 0 {
		t.Fatalf("selectors after clearselectors = %q", u[11])
	}
}

func TestACLCommandRulesDescription(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	admin := aclClient(t, addr, "", "")
	for _, cat := range aclDo(t, admin, "ACL", "CAT").([]any) {
		aclDo(t, admin, "ACL", "SETUSER", "u", "reset", "+@all", "-@"+cat.(string))
		if got := aclDo(t, admin, "ACL", "GETUSER", "u").([]any)[5]; got != "+@all -@"+cat.(string) {
			t.Errorf("+@all -@%s described as %q", cat, got)
		}
		aclDo(t, admin, "ACL", "SETUSER", "u", "reset", "-@all", "+@"+cat.(string))
		if got := aclDo(t, admin, "ACL", "GETUSER", "u").([]any)[5]; got != "-@all +@"+cat.(string) {
			t.Errorf("-@all +@%s described as %q", cat, got)
		}
	}
	aclDo(t, admin, "ACL", "SETUSER", "u", "reset", "+@all", "-client|kill", "-select", "+select|0")
	if got := aclDo(t, admin, "ACL", "GETUSER", "u").([]any)[5]; got != "+@all -client|kill -select +select|0" {
		t.Errorf("described as %q", got)
	}
	wantErr(t, admin, "ERR Unknown category 'nosuch'", "ACL", "CAT", "nosuch")
	if got := aclDo(t, admin, "ACL", "GENPASS", "5").(string); len(got) != 2 {
		t.Errorf("GENPASS 5 = %q", got)
	}
	if got := aclDo(t, admin, "ACL", "GENPASS").(string); len(got) != 64 {
		t.Errorf("GENPASS = %q", got)
	}
}

func TestACLRequirepassAndAuth(t *testing.T) {
	_, addr := redistest.StartSluice(t, "requirepass", "pw")
	anon := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	defer anon.Close()
	if err := anon.Ping(context.Background()).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Fatalf("PING without AUTH: %v", err)
	}
	admin := aclClient(t, addr, "", "pw")
	aclDo(t, admin, "ACL", "SETUSER", "bob", "on", ">bpw", "+@all", "~*")
	bob := aclClient(t, addr, "bob", "bpw")
	if got := aclDo(t, bob, "ACL", "WHOAMI"); got != "bob" {
		t.Fatalf("WHOAMI = %v", got)
	}
	// RESET goes back to the default user, unauthenticated.
	aclDo(t, bob, "RESET")
	wantErr(t, bob, "NOAUTH Authentication required.", "ACL", "WHOAMI")
	aclDo(t, bob, "AUTH", "pw")
	if got := aclDo(t, bob, "ACL", "WHOAMI"); got != "default" {
		t.Fatalf("WHOAMI after RESET = %v", got)
	}
	// CONFIG SET requirepass changes the default user's password.
	aclDo(t, admin, "CONFIG", "SET", "requirepass", "")
	if got := aclDo(t, anon, "PING"); got != "PONG" {
		t.Fatalf("PING = %v", got)
	}
	if n := aclDo(t, admin, "CLIENT", "KILL", "USER", "bob"); n != int64(0) {
		t.Fatalf("CLIENT KILL USER bob = %v", n)
	}
	wantErr(t, admin, "ERR No such user 'nobody'", "CLIENT", "KILL", "USER", "nobody")
}

func TestACLChannelsAndTransactions(t *testing.T) {
	_, addr := redistest.StartSluice(t)
	ctx := context.Background()
	admin := aclClient(t, addr, "", "")
	aclDo(t, admin, "ACL", "SETUSER", "ps", "on", "nopass", "+@all", "~*", "resetchannels", "&news:*")
	ps := aclClient(t, addr, "ps", "x")
	if n := aclDo(t, ps, "PUBLISH", "news:1", "m"); n != int64(0) {
		t.Fatalf("PUBLISH = %v", n)
	}
	wantErr(t, ps, "NOPERM this user has no permissions to access one of the channels used as arguments", "PUBLISH", "other", "m")

	sub := redis.NewClient(&redis.Options{Addr: addr, Username: "ps", Password: "x", Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	defer sub.Close()
	p := sub.Subscribe(ctx, "news:1")
	if _, err := p.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	// Taking the channel away disconnects the subscriber.
	aclDo(t, admin, "ACL", "SETUSER", "ps", "resetchannels")
	if _, err := p.ReceiveTimeout(ctx, 2*time.Second); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("subscriber not disconnected: %v", err)
	}
	p.Close()

	// EXEC checks the queued commands again.
	aclDo(t, admin, "ACL", "SETUSER", "tx", "on", "nopass", "+multi", "+exec", "+incr", "~*")
	tx := aclClient(t, addr, "tx", "x")
	cmds, _ := tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Incr(ctx, "n")
		pipe.Do(ctx, "ACL", "SETUSER", "tx", "-incr") // refused when queued
		return nil
	})
	if len(cmds) != 2 || cmds[1].Err() == nil {
		t.Fatalf("queued ACL SETUSER: %v", cmds)
	}
	conn := tx.Conn()
	defer conn.Close()
	mustDoConn := func(args ...any) (any, error) { return conn.Do(ctx, args...).Result() }
	mustDoConn("MULTI")
	mustDoConn("INCR", "n")
	aclDo(t, admin, "ACL", "SETUSER", "tx", "-incr")
	if _, err := mustDoConn("EXEC"); err == nil || !strings.HasPrefix(err.Error(), "NOPERM ACLs rules changed") {
		t.Fatalf("EXEC = %v", err)
	}
	log := aclDo(t, admin, "ACL", "LOG", "1").([]any)
	if e := log[0].([]any); e[5] != "multi" || e[7] != "incr" {
		t.Fatalf("log = %q", e)
	}

	// Scripts run with the caller's permissions.
	aclDo(t, admin, "ACL", "SETUSER", "lua", "on", "nopass", "+eval", "+get", "~*")
	lua := aclClient(t, addr, "lua", "x")
	if _, err := lua.Eval(ctx, "return redis.call('incr','n')", nil).Result(); err == nil || !strings.Contains(err.Error(), "The user executing the script can't run this command or subcommand") {
		t.Fatalf("EVAL incr: %v", err)
	}
	if v, err := lua.Eval(ctx, "return redis.acl_check_cmd('get','k') and 1 or 0", nil).Result(); err != nil || v != int64(1) {
		t.Fatalf("acl_check_cmd get = %v %v", v, err)
	}
	if v, err := lua.Eval(ctx, "return redis.acl_check_cmd('set','k','v') and 1 or 0", nil).Result(); err != nil || v != int64(0) {
		t.Fatalf("acl_check_cmd set = %v %v", v, err)
	}
}

func TestACLFileAndConfigUsers(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "users.acl")
	if err := os.WriteFile(file, []byte("user alice on >apw ~* &* +@all\nuser default on nopass ~* &* +@all\n"), 0644); err != nil {
		t.Fatal(err)
	}
	_, addr := redistest.StartSluice(t, "aclfile", file)
	admin := aclClient(t, addr, "", "")
	alice := aclClient(t, addr, "alice", "apw")
	if got := aclDo(t, alice, "ACL", "WHOAMI"); got != "alice" {
		t.Fatalf("WHOAMI = %v", got)
	}
	aclDo(t, admin, "ACL", "SETUSER", "eve", "on", ">epw", "+get", "~*")
	aclDo(t, admin, "ACL", "SAVE")
	data, _ := os.ReadFile(file)
	if !strings.Contains(string(data), "user eve on #") {
		t.Fatalf("saved file: %q", data)
	}
	os.WriteFile(file, append(data, []byte("user eve off\n")...), 0644)
	if _, err := admin.Do(context.Background(), "ACL", "LOAD").Result(); err == nil || !strings.Contains(err.Error(), "Duplicate user 'eve' found") {
		t.Fatalf("ACL LOAD of a bad file: %v", err)
	}
	os.WriteFile(file, data, 0644)
	aclDo(t, admin, "ACL", "LOAD")
	eve := aclClient(t, addr, "eve", "epw")
	wantErr(t, eve, "NOPERM this user has no permissions to run the 'set' command", "SET", "k", "v")
}
