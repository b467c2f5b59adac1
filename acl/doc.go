// Package acl is Redis 7.0's access control engine: users, their
// passwords and selectors, the rules ACL SETUSER and the aclfile speak,
// the permission check, the ACL log, and the texts ACL LIST and GETUSER
// show. It knows commands only as the server describes them (a Commands
// table of names, subcommands and categories) and a command's keys and
// channels only as the server finds them in its arguments (a Request).
package acl
