package models

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"

	"github.com/primerhq/primer/wire"
)

// Event streams wait for a wake-up instead of polling the database. A
// store wakes the streams of its own process when it appends an event
// (in-process broadcast), and on PostgreSQL it also sends NOTIFY in the
// event's transaction, so every other process listening on the database
// (LISTEN, one connection per process) wakes its streams once the event is
// committed. SQLite serves one process, where the broadcast is all it takes.
//
// A notification can be lost (the listening connection drops, another
// process writes SQLite): a watchdog reads the newest event id once every
// EventSafetyPoll while anyone waits, one query per process however many
// streams wait, and wakes every stream when it moved past what was
// announced. A stream itself queries only when woken.

// EventSafetyPoll is how often the watchdog checks for events nobody
// announced, while streams wait.
const EventSafetyPoll = 3 * time.Second

// Wake-up topics: one workspace's events, one tenant's, every event.
func workspaceTopic(id string) string { return "ws:" + id }
func tenantTopic(id string) string    { return "tenant:" + id }

const allTopic = "all"

// Topics of the other streams: a run's progress, a session's transcript.
func runTopic(id string) string     { return "run:" + id }
func sessionTopic(id string) string { return "session:" + id }

// topicMark starts a NOTIFY payload that names a topic rather than an
// event: "origin T topic".
const topicMark = "T"

// eventHub wakes the streams waiting on a topic. A waiter takes the
// topic's channel before it reads the store and waits for it to close
// after, so an event appended in between is never missed.
type eventHub struct {
	mu      sync.Mutex
	topics  map[string]chan struct{}
	lastID  uint64 // the newest event id announced
	started bool   // the watchdog (and listener) run
	// listening is closed once the listener first LISTENs (PostgreSQL).
	listening     chan struct{}
	listeningOnce sync.Once
}

func newEventHub() *eventHub {
	return &eventHub{topics: map[string]chan struct{}{}, listening: make(chan struct{})}
}

// wait returns the channel closed by the next wake-up of topic.
func (h *eventHub) wait(topic string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.topics[topic]
	if ch == nil {
		ch = make(chan struct{})
		h.topics[topic] = ch
	}
	return ch
}

// wake closes the channels of topics and records id as announced.
func (h *eventHub) wake(id uint64, topics ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastID = max(h.lastID, id)
	for _, t := range topics {
		if ch := h.topics[t]; ch != nil {
			close(ch)
			delete(h.topics, t)
		}
	}
}

// wakeAll wakes every waiter: events may have been missed.
func (h *eventHub) wakeAll(id uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastID = max(h.lastID, id)
	for t, ch := range h.topics {
		close(ch)
		delete(h.topics, t)
	}
}

// waiting reports whether anyone waits, and the newest id announced.
func (h *eventHub) waiting() (bool, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.topics) > 0, h.lastID
}

// eventTopics are the topics an event of workspace ws in tenant wakes.
func eventTopics(tenant, ws string) []string {
	return []string{workspaceTopic(ws), tenantTopic(tenant), allTopic}
}

// WaitWorkspaceEvents returns a channel closed when workspace id may have
// new events (or its row went). Take it before reading the events, wait
// after.
func (s *Store) WaitWorkspaceEvents(id string) <-chan struct{} {
	s.startNotify()
	return s.hub.wait(workspaceTopic(id))
}

// WaitTenantEvents is WaitWorkspaceEvents for tenant's events, every
// tenant's when tenant is "".
func (s *Store) WaitTenantEvents(tenant string) <-chan struct{} {
	s.startNotify()
	if tenant == "" {
		return s.hub.wait(allTopic)
	}
	return s.hub.wait(tenantTopic(tenant))
}

// WaitListening starts the event wake-ups and, on PostgreSQL, waits until
// this store listens for other processes' events: from then on an event
// appended anywhere wakes its streams here at once. Streams need not call
// it (a notification sent before is caught by the watchdog); tests and
// benchmarks that time the wake-up do.
func (s *Store) WaitListening(ctx context.Context) error {
	s.startNotify()
	if s.dialect != DialectPostgres {
		return nil
	}
	select {
	case <-s.hub.listening:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WaitRun returns a channel closed when run id's status or cases may have
// changed. Take it before reading, wait after. Unlike the event streams,
// nothing watches for lost wake-ups: callers poll slowly as well.
func (s *Store) WaitRun(id string) <-chan struct{} {
	s.startNotify()
	return s.hub.wait(runTopic(id))
}

// WaitTranscript is WaitRun for session id's transcript and agent run.
func (s *Store) WaitTranscript(id string) <-chan struct{} {
	s.startNotify()
	return s.hub.wait(sessionTopic(id))
}

// signal wakes the waiters of topic after a committed write: in this
// process at once, in the others through NOTIFY. It is best effort: a
// notification that fails is caught by the waiters' slow poll.
func (s *Store) signal(ctx context.Context, topic string) {
	s.hub.wake(0, topic)
	if s.dialect != DialectPostgres {
		return
	}
	err := s.w.WithContext(ctx).Exec("SELECT pg_notify(?, ?)", s.channel, s.origin+" "+topicMark+" "+topic).Error
	if err != nil {
		s.log.Debug("events: notify", "topic", topic, "error", err.Error())
	}
}

// announce wakes this process's streams for an event, once committed.
func (s *Store) announce(e *wire.Event) {
	s.hub.wake(e.ID, eventTopics(e.TenantID, e.WorkspaceID)...)
}

// notifyGone tells the other processes, at tx's commit, that workspace id
// is gone: its streams end without waiting for an event.
func (s *Store) notifyGone(tx *gorm.DB, id string) error {
	if s.dialect != DialectPostgres {
		return nil
	}
	return tx.Exec("SELECT pg_notify(?, ?)", s.channel, s.origin+" 0  "+id).Error
}

// notifyPayload is what NOTIFY carries: the sending store, so it skips its
// own notifications (it woke its streams already), then the event.
func (s *Store) notifyPayload(e *wire.Event) string {
	return s.origin + " " + strconv.FormatUint(e.ID, 10) + " " + e.TenantID + " " + e.WorkspaceID
}

// startNotify starts, once, the watchdog and on PostgreSQL the listener.
// They run until the store is closed.
func (s *Store) startNotify() {
	s.hub.mu.Lock()
	started := s.hub.started
	s.hub.started = true
	s.hub.mu.Unlock()
	if started {
		return
	}
	go s.watchdog()
	if s.dialect == DialectPostgres && s.url != "" {
		go s.listen()
	}
}

// watchdog wakes every stream when events appeared that nobody announced.
func (s *Store) watchdog() {
	t := time.NewTicker(EventSafetyPoll)
	defer t.Stop()
	for {
		select {
		case <-s.closed:
			return
		case <-t.C:
		}
		waiting, last := s.hub.waiting()
		if !waiting {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), EventSafetyPoll)
		latest, err := s.LatestEventID(ctx, "")
		cancel()
		if err == nil && latest > last {
			s.hub.wakeAll(latest)
		}
	}
}

// listen holds a connection that LISTENs for other processes' events and
// wakes this process's streams. A lost connection is dialed again (after a
// pause growing to 5 s); every stream is woken on each new connection, as
// notifications sent meanwhile were lost.
func (s *Store) listen() {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.closed
		cancel()
	}()
	pause := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("events: listen for other processes' events", "error", err.Error(), "retry_in", pause.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Second)
	}
}

func (s *Store) listenOnce(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.Connect(dctx, s.url)
	cancel()
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		return err
	}
	s.hub.wakeAll(0)
	s.hub.listeningOnce.Do(func() { close(s.hub.listening) })
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		origin, rest, _ := strings.Cut(n.Payload, " ")
		if origin == s.origin {
			continue
		}
		if topic, ok := strings.CutPrefix(rest, topicMark+" "); ok {
			s.hub.wake(0, topic)
			continue
		}
		f := strings.SplitN(rest, " ", 3)
		if len(f) != 3 {
			s.hub.wakeAll(0)
			continue
		}
		id, _ := strconv.ParseUint(f[0], 10, 64)
		s.hub.wake(id, eventTopics(f[1], f[2])...)
	}
}

// newOrigin names a store in its notifications.
func newOrigin() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// CountStatements adds one to n for every statement the store runs
// through GORM (queries, raw statements, writes), on every pool: the
// benchmarks count what idle streams cost the database with it. The
// listener's own connection is not counted; idle, it runs nothing.
func (s *Store) CountStatements(n *atomic.Int64) error {
	count := func(*gorm.DB) { n.Add(1) }
	for _, db := range s.pools() {
		cb := db.Callback()
		for _, err := range []error{
			cb.Query().After("gorm:query").Register("primer:count", count),
			cb.Row().After("gorm:row").Register("primer:count", count),
			cb.Raw().After("gorm:raw").Register("primer:count", count),
			cb.Create().After("gorm:create").Register("primer:count", count),
			cb.Update().After("gorm:update").Register("primer:count", count),
			cb.Delete().After("gorm:delete").Register("primer:count", count),
		} {
			if err != nil {
				return err
			}
		}
	}
	return nil
}
