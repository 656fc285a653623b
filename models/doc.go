// Package models is Primer's store: the Store that reads and writes the
// rows on SQLite (the embedded default) or PostgreSQL with GORM. The rows'
// types are the API's resources and live in package wire, so the clients
// share them without linking a database driver.
package models
