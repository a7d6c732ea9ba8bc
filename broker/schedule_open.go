package broker

// openSchedule makes the delayed-delivery services (New): the schedule
// and timer topics join the built-in topics, the services hear of every
// dispatch into them.
func (b *Broker) openSchedule() error {
	s, err := newScheduleService(b)
	if err != nil {
		return err
	}
	b.sched = s
	b.topics.addSystem(newTopicConfig(ScheduleTopic, scheduleQueues, PermRead|PermWrite))
	if b.cfg.TimerWheelEnable {
		if keep := b.cfg.FileReservedTime * 3600; keep > 0 && keep < b.cfg.TimerMaxDelaySec {
			// A timer's message stays in the CommitLog until it is due.
			b.log.Warn("broker: fileReservedTime does not outlast timerMaxDelaySec: retention may delete a timer's message before it is due",
				"fileReservedTimeHours", b.cfg.FileReservedTime, "timerMaxDelaySec", b.cfg.TimerMaxDelaySec)
		}
		b.topics.addSystem(newTopicConfig(TimerTopic, 1, PermRead|PermWrite))
		b.timers = newTimerService(b)
		b.store.OnDispatch(b.timers.onDispatch)
	}
	b.store.OnDispatch(s.onDispatch)
	return nil
}

// addSystem adds a built-in topic unless the table has it (a slave's
// copy of its master's table has it already).
func (m *topicManager) addSystem(tc TopicConfig) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.system[tc.TopicName] = true
	if _, ok := m.mu.table[tc.TopicName]; !ok {
		m.mu.table[tc.TopicName] = tc
	}
}
