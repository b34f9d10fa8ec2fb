import Tern

/// The upstream's task for an exchange recorded: a cancel is noted first, so that the recorder
/// tells a stream the client left from an answer the pipeline stopped.
struct RecordedTask: ConnectionWaiting {
    let task: any TransportTask
    let recorder: RecordingReceiver

    init(_ task: any TransportTask, recorder: RecordingReceiver) {
        self.task = task
        self.recorder = recorder
    }

    func cancel() {
        recorder.noteEnd(.cancelled)
        task.cancel()
    }

    func resumeReceiving() { task.resumeReceiving() }

    var isWaitingForConnection: Bool { (task as? any ConnectionWaiting)?.isWaitingForConnection ?? false }
    var isWaitingForADescriptor: Bool { (task as? any ConnectionWaiting)?.isWaitingForADescriptor ?? false }
}
